// `ember launch` through the binary: one-line flag errors with status 2, the failing rank's
// status, `ember` resolving to the running build, and signals sent to the launcher.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "mem_file.h"

namespace {

using Clock = std::chrono::steady_clock;

using ember::test::MemFile;

// Starts `ember ARGS...` with its stdout and stderr in the given files and PATH without ember.
pid_t start_ember(const std::vector<std::string>& args, const MemFile& out, const MemFile& err) {
  std::vector<std::string> all{EMBER_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out.fd(), 1);
    ::dup2(err.fd(), 2);
    ::setenv("PATH", "/usr/bin:/bin", 1);
    ::execv(EMBER_BINARY, argv.data());
    ::_exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Outcome {
  int status = 0;
  std::string out, err;
};

Outcome ember(const std::vector<std::string>& args) {
  MemFile out, err;
  Outcome o;
  o.status = wait_exit(start_ember(args, out, err));
  o.out = out.read();
  o.err = err.read();
  return o;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A user error: status 2 and one line on stderr that mentions `what`.
void expect_user_error(const std::vector<std::string>& args, const std::string& what) {
  Outcome o = ember(args);
  EXPECT_EQ(o.status, 2) << o.err;
  EXPECT_EQ(count(o.err, "\n"), 1u) << o.err;
  EXPECT_NE(o.err.find(what), std::string::npos) << o.err;
  EXPECT_EQ(o.out, "");
}

TEST(LaunchCli, FlagErrorsAreOneLineWithStatus2) {
  expect_user_error({"launch", "--nproc_per_node", "2", "sh", "-c", "true"}, "missing `--`");
  expect_user_error({"launch", "--nproc_per_node", "2"}, "PROGRAM");
  expect_user_error({"launch", "--nproc_per_node", "2", "--"}, "PROGRAM");
  expect_user_error({"launch", "--nproc_per_node", "0", "--", "true"}, "--nproc_per_node=0");
  expect_user_error({"launch", "--master_port", "70000", "--", "true"}, "--master_port=70000");
  expect_user_error({"launch", "--master_port", "http", "--", "true"}, "--master_port");
  expect_user_error({"launch", "--nnodes", "2", "--node_rank", "2", "--", "true"}, "--node_rank=2");
  expect_user_error({"launch", "--bogus", "--", "true"}, "--bogus");
  expect_user_error({"launch", "--", "ember-no-such-program"}, "ember-no-such-program");
}

TEST(LaunchCli, RanksRunWithPrefixedOutput) {
  Outcome o = ember({"launch", "--nproc_per_node", "2", "--", "sh", "-c", "echo rank $RANK of $WORLD_SIZE"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(count(o.out, "[rank 0] rank 0 of 2\n"), 1u) << o.out;
  EXPECT_EQ(count(o.out, "[rank 1] rank 1 of 2\n"), 1u) << o.out;
  EXPECT_EQ(o.err, "");
}

TEST(LaunchCli, EmberMeansThisBuild) {
  // PATH holds no ember: the ranks run the launcher's own executable
  Outcome o = ember({"launch", "--nproc_per_node", "2", "--", "ember", "--version"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(count(o.out, "[rank 0] ember "), 1u) << o.out;
  EXPECT_EQ(count(o.out, "[rank 1] ember "), 1u) << o.out;
}

TEST(LaunchCli, AFailingRankStopsTheJobAndSetsTheStatus) {
  auto t0 = Clock::now();
  Outcome o = ember({"launch", "--nproc_per_node", "2", "--kill_timeout", "2", "--", "sh", "-c",
                     "if [ $RANK = 1 ]; then exit 4; fi; sleep 30"});
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5);
  EXPECT_EQ(o.status, 4);
  EXPECT_EQ(o.err, "ember launch: rank 1 exited with status 4\n"
                   "ember: error: ember launch: rank 1 failed (exit status 4); the job stopped\n");
}

TEST(LaunchCli, SigtermToTheLauncherReachesEveryRank) {
  MemFile out, err;
  pid_t pid = start_ember({"launch", "--nproc_per_node", "2", "--", "sh", "-c",
                           "trap 'echo got TERM; exit 0' TERM; echo ready; while :; do sleep 0.05; done"},
                          out, err);
  for (auto t0 = Clock::now(); count(out.read(), "ready") < 2 && Clock::now() - t0 < std::chrono::seconds(10);)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(count(out.read(), "ready"), 2u) << out.read() << err.read();
  ::kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 128 + SIGTERM);
  EXPECT_EQ(count(out.read(), "[rank 0] got TERM\n"), 1u) << out.read();
  EXPECT_EQ(count(out.read(), "[rank 1] got TERM\n"), 1u) << out.read();
}

}  // namespace
