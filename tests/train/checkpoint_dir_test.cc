// Checkpoint directories: the layout, `latest`, replacing a step, keep_last, and a save killed
// with SIGKILL half-way through writing.
#include "ember/train/checkpoint_dir.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "ember/core/error.h"
#include "test_util.h"

using namespace ember::train;
namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes what a trainer would: weights and state, one of them in a subdirectory.
std::function<void(const fs::path&)> files_of(const std::string& tag) {
  return [tag](const fs::path& dir) {
    write_text(dir / "model.safetensors", "weights " + tag);
    write_text(dir / "trainer_state.json", "{\"tag\": \"" + tag + "\"}");
    fs::create_directory(dir / "tokenizer");
    write_text(dir / "tokenizer" / "tok.model", "tok " + tag);
  };
}

std::vector<std::string> hidden_entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().starts_with(".")) out.push_back(e.path().filename().string());
  }
  return out;
}

}  // namespace

TEST(CheckpointDir, SaveWritesTheLayoutAndLatest) {
  ember::test::TempDir out("ember_ckpt");
  EXPECT_FALSE(find_latest_checkpoint(out.path()));
  CheckpointWriter w(out.path());
  fs::path dir = w.save(10, files_of("a"));
  EXPECT_EQ(dir, fs::path(out.path()) / "checkpoints" / "000010");
  EXPECT_EQ(read_text(dir / "model.safetensors"), "weights a");
  EXPECT_EQ(read_text(dir / "tokenizer" / "tok.model"), "tok a");
  EXPECT_EQ(read_text(dir / "COMPLETE"), "{\"step\": 10}\n");
  EXPECT_EQ(fs::read_symlink(fs::path(out.path()) / "checkpoints" / "latest"), "000010");
  auto latest = find_latest_checkpoint(out.path());
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->step, 10);
  EXPECT_EQ(latest->dir, dir);
  EXPECT_TRUE(hidden_entries(w.checkpoints_dir()).empty());

  w.save(1234567, files_of("b"));
  EXPECT_EQ(find_latest_checkpoint(out.path())->dir.filename(), "1234567");
  EXPECT_EQ(checkpoint_dir_name(7), "000007");
  EXPECT_EQ(list_checkpoints(out.path()).size(), 2u);
}

TEST(CheckpointDir, ReplacingAStepKeepsItWhole) {
  ember::test::TempDir out("ember_ckpt");
  CheckpointWriter w(out.path());
  w.save(10, files_of("old"));
  fs::path dir = w.save(10, files_of("new"));
  EXPECT_EQ(read_text(dir / "model.safetensors"), "weights new");
  EXPECT_EQ(find_latest_checkpoint(out.path())->step, 10);
  EXPECT_TRUE(hidden_entries(w.checkpoints_dir()).empty());
}

TEST(CheckpointDir, AFailingWriterChangesNothing) {
  ember::test::TempDir out("ember_ckpt");
  CheckpointWriter w(out.path());
  w.save(10, files_of("a"));
  EXPECT_THROW(w.save(20, [](const fs::path& dir) {
                 write_text(dir / "model.safetensors", "half");
                 throw ember::Error(ember::ErrorKind::kIO, "disk full");
               }),
               ember::Error);
  EXPECT_EQ(find_latest_checkpoint(out.path())->step, 10);
  EXPECT_TRUE(hidden_entries(w.checkpoints_dir()).empty());
  EXPECT_FALSE(fs::exists(w.checkpoints_dir() / "000020"));
}

TEST(CheckpointDir, KeepLastPrunesOldSteps) {
  ember::test::TempDir out("ember_ckpt");
  CheckpointWriter w(out.path(), 2);
  for (int64_t s : {10, 20, 30}) w.save(s, files_of(std::to_string(s)));
  auto all = list_checkpoints(out.path());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].step, 20);
  EXPECT_EQ(all[1].step, 30);
}

TEST(CheckpointDir, FindFallsBackWhenLatestIsBroken) {
  ember::test::TempDir out("ember_ckpt");
  CheckpointWriter w(out.path());
  w.save(10, files_of("a"));
  w.save(20, files_of("b"));
  const fs::path ck = w.checkpoints_dir();
  // an incomplete directory with a higher step is never chosen
  fs::create_directory(ck / "000030");
  write_text(ck / "000030" / "model.safetensors", "partial");
  EXPECT_EQ(find_latest_checkpoint(out.path())->step, 20);
  // latest dangling -> the highest complete step
  fs::remove(ck / "latest");
  fs::create_symlink("000099", ck / "latest");
  EXPECT_EQ(find_latest_checkpoint(out.path())->step, 20);
  // a marker that names another step does not count
  write_text(ck / "000030" / "COMPLETE", "{\"step\": 31}\n");
  EXPECT_FALSE(is_complete_checkpoint(ck / "000030"));
  EXPECT_TRUE(is_complete_checkpoint(ck / "000010"));
}

// The requirement: a checkpoint survives a kill -9 during the next save.
TEST(CheckpointDir, SigkillDuringSaveLeavesLatestIntact) {
  ember::test::TempDir out("ember_ckpt");
  CheckpointWriter w(out.path());
  w.save(10, files_of("ten"));

  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    CheckpointWriter cw(out.path());
    cw.save(20, [&](const fs::path& dir) {
      write_text(dir / "model.safetensors", "half of the wei");
      char c = 'r';
      (void)!::write(ready[1], &c, 1);
      ::sleep(30);  // killed here
    });
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);  // the child is inside write_files
  ::close(ready[0]);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));

  const fs::path ck = w.checkpoints_dir();
  const std::string tmp_name = ".tmp-20-" + std::to_string(child);
  EXPECT_TRUE(fs::exists(ck / tmp_name));  // the dead save's leftovers
  EXPECT_FALSE(fs::exists(ck / "000020"));
  auto latest = find_latest_checkpoint(out.path());
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->step, 10);
  EXPECT_EQ(read_text(latest->dir / "model.safetensors"), "weights ten");
  EXPECT_EQ(read_text(latest->dir / "trainer_state.json"), "{\"tag\": \"ten\"}");
  EXPECT_EQ(list_checkpoints(out.path()).size(), 1u);

  // the next save succeeds and removes the leftovers
  w.save(20, files_of("twenty"));
  EXPECT_FALSE(fs::exists(ck / tmp_name));
  EXPECT_TRUE(hidden_entries(ck).empty());
  EXPECT_EQ(find_latest_checkpoint(out.path())->step, 20);
  EXPECT_EQ(read_text(ck / "000020" / "model.safetensors"), "weights twenty");
}
