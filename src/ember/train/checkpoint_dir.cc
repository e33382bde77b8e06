#include "ember/train/checkpoint_dir.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2 (glibc >= 2.28)
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/io/checksum.h"
#include "ember/core/file.h"

namespace fs = std::filesystem;

namespace ember::train {

namespace {

constexpr const char* kLatest = "latest";
constexpr const char* kComplete = "COMPLETE";
constexpr const char* kChecksums = "checksums.json";

[[noreturn]] void fail_io(const fs::path& path, const std::string& what) {
  fail(ErrorKind::kIO, path.string() + ": " + what + ": " + std::strerror(errno));
}

// fsync a file or a directory (the latter makes renames and creations inside it durable).
void sync_path(const fs::path& path, bool directory) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) fail_io(path, "cannot open to fsync");
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail_io(path, "fsync failed");
  }
  ::close(fd);
}

// Every file and directory under root, then root itself.
void sync_tree(const fs::path& root) {
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_symlink()) continue;
    if (e.is_directory()) {
      sync_path(e.path(), true);
    } else if (e.is_regular_file()) {
      sync_path(e.path(), false);
    }
  }
  sync_path(root, true);
}

// The step a checkpoint directory's name says, or -1 if it is not all digits.
int64_t step_of_name(const std::string& name) {
  if (name.empty() || name.size() > 18) return -1;
  int64_t step = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return -1;
    step = step * 10 + (c - '0');
  }
  return step;
}

void remove_tree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) fail(ErrorKind::kIO, path.string() + ": cannot remove: " + ec.message());
}

}  // namespace

void write_checksums(const fs::path& dir) {
  nlohmann::json files = nlohmann::json::object();
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != kChecksums) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    auto c = io::file_checksum(p.string());
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", unsigned(c.crc32));
    files[p.filename().string()] = {{"bytes", c.bytes}, {"crc32", hex}};
  }
  write_json_file((dir / kChecksums).string(), nlohmann::json{{"files", files}});
}

void verify_checksums(const fs::path& dir) {
  const fs::path list = dir / kChecksums;
  std::error_code ec;
  if (!fs::exists(list, ec)) return;  // written by an ember from before checksums
  auto j = read_json_file(list.string());
  if (!j.is_object() || !j.contains("files") || !j["files"].is_object())
    fail_corrupt(list.string() + ": \"files\" must be an object");
  for (const auto& [name, want] : j["files"].items()) {
    const fs::path file = dir / name;
    if (name.find('/') != std::string::npos || !want.is_object() || !want.contains("bytes") || !want.contains("crc32") ||
        !want["bytes"].is_number_unsigned() || !want["crc32"].is_string())
      fail_corrupt(list.string() + ": entry \"" + name + "\" must be {\"bytes\": N, \"crc32\": \"hex\"}");
    if (!fs::is_regular_file(file, ec)) fail(ErrorKind::kNotFound, file.string() + ": missing (listed in " + list.string() + ")");
    auto got = io::file_checksum(file.string());
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", unsigned(got.crc32));
    if (got.bytes != want["bytes"].get<uint64_t>() || hex != want["crc32"].get<std::string>())
      fail_corrupt(file.string() + ": damaged since it was saved (" + std::to_string(got.bytes) + " bytes, crc32 " + hex + "; " +
                   list.string() + " records " + std::to_string(want["bytes"].get<uint64_t>()) + " bytes, crc32 " +
                   want["crc32"].get<std::string>() + ")");
  }
}

int64_t checkpoint_step(const fs::path& dir) { return step_of_name(dir.filename().string()); }

std::string checkpoint_dir_name(int64_t step) {
  std::string digits = std::to_string(step);
  return digits.size() < 6 ? std::string(6 - digits.size(), '0') + digits : digits;
}

bool is_complete_checkpoint(const fs::path& dir) {
  std::error_code ec;
  const fs::path marker = dir / kComplete;
  if (!fs::is_regular_file(marker, ec)) return false;
  try {
    auto j = read_json_file(marker.string());
    return j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
           j["step"].get<int64_t>() == step_of_name(dir.filename().string());
  } catch (const std::exception&) {
    return false;
  }
}

std::vector<CheckpointRef> list_checkpoints(const fs::path& output_dir) {
  std::vector<CheckpointRef> out;
  std::error_code ec;
  const fs::path dir = output_dir / "checkpoints";
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const int64_t step = step_of_name(name);
    if (step < 0 || !e.is_directory() || e.is_symlink()) continue;
    if (is_complete_checkpoint(e.path())) out.push_back({step, e.path()});
  }
  std::sort(out.begin(), out.end(), [](const CheckpointRef& a, const CheckpointRef& b) { return a.step < b.step; });
  return out;
}

std::optional<CheckpointRef> find_latest_checkpoint(const fs::path& output_dir) {
  std::error_code ec;
  const fs::path dir = output_dir / "checkpoints";
  const fs::path link = dir / kLatest;
  if (fs::is_symlink(link, ec)) {
    fs::path target = fs::read_symlink(link, ec);
    if (!ec) {
      if (target.is_relative()) target = dir / target;
      const int64_t step = step_of_name(target.filename().string());
      if (step >= 0 && fs::is_directory(target, ec) && is_complete_checkpoint(target)) {
        return CheckpointRef{step, dir / target.filename()};
      }
    }
  }
  std::vector<CheckpointRef> all = list_checkpoints(output_dir);
  if (all.empty()) return std::nullopt;
  return all.back();
}

CheckpointWriter::CheckpointWriter(fs::path output_dir, int keep_last)
    : output_dir_(std::move(output_dir)), dir_(output_dir_ / "checkpoints"), keep_last_(keep_last) {}

fs::path CheckpointWriter::save(int64_t step, const std::function<void(const fs::path&)>& write_files) {
  if (step < 0) fail(ErrorKind::kInvalidArgument, "checkpoint step " + std::to_string(step) + " is negative");
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) {
    fs::create_directories(dir_, ec);
    if (ec) fail(ErrorKind::kIO, dir_.string() + ": cannot create: " + ec.message());
    sync_path(output_dir_, true);
  }
  remove_leftovers();

  // write into the temporary directory, then mark it complete
  const std::string name = checkpoint_dir_name(step);
  const fs::path tmp = dir_ / (".tmp-" + std::to_string(step) + "-" + std::to_string(::getpid()));
  fs::create_directory(tmp, ec);
  if (ec) fail(ErrorKind::kIO, tmp.string() + ": cannot create: " + ec.message());
  try {
    write_files(tmp);
    write_checksums(tmp);
    const std::string marker = "{\"step\": " + std::to_string(step) + "}\n";
    AtomicFile complete((tmp / kComplete).string());
    complete.write(marker.data(), marker.size());
    complete.commit();
    sync_tree(tmp);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }

  // move it into place; an existing checkpoint of this step is swapped out, then removed
  const fs::path final_dir = dir_ / name;
  if (fs::exists(fs::symlink_status(final_dir, ec))) {
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) == 0) {
      sync_path(dir_, true);
      remove_tree(tmp);  // now the old checkpoint
    } else if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) {
      const fs::path old = dir_ / (".old-" + std::to_string(step) + "-" + std::to_string(::getpid()));
      if (::rename(final_dir.c_str(), old.c_str()) != 0) fail_io(final_dir, "cannot move aside");
      if (::rename(tmp.c_str(), final_dir.c_str()) != 0) fail_io(tmp, "cannot rename to " + final_dir.string());
      sync_path(dir_, true);
      remove_tree(old);
    } else {
      fail_io(tmp, "cannot exchange with " + final_dir.string());
    }
  } else {
    if (::rename(tmp.c_str(), final_dir.c_str()) != 0) fail_io(tmp, "cannot rename to " + final_dir.string());
  }
  sync_path(dir_, true);

  point_latest_at(name);
  prune();
  return final_dir;
}

// Removes hidden leftovers of killed saves: .tmp-*, .old-* directories and .latest-* links.
void CheckpointWriter::remove_leftovers() {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(".tmp-") || name.starts_with(".old-") || name.starts_with(".latest-")) {
      stale.push_back(e.path());
    }
  }
  for (const fs::path& p : stale) remove_tree(p);
}

void CheckpointWriter::point_latest_at(const std::string& name) {
  const fs::path tmp_link = dir_ / (".latest-" + std::to_string(::getpid()));
  const fs::path link = dir_ / kLatest;
  ::unlink(tmp_link.c_str());
  if (::symlink(name.c_str(), tmp_link.c_str()) != 0) fail_io(tmp_link, "cannot create symlink");
  if (::rename(tmp_link.c_str(), link.c_str()) != 0) {
    ::unlink(tmp_link.c_str());
    fail_io(link, "cannot replace");
  }
  sync_path(dir_, true);
}

void CheckpointWriter::prune() {
  if (keep_last_ <= 0) return;
  std::vector<CheckpointRef> all = list_checkpoints(output_dir_);
  std::optional<CheckpointRef> latest = find_latest_checkpoint(output_dir_);
  int64_t excess = int64_t(all.size()) - keep_last_;
  for (const CheckpointRef& c : all) {
    if (excess <= 0) break;
    if (latest && c.step == latest->step) continue;
    remove_tree(c.dir);
    --excess;
  }
}

}  // namespace ember::train
