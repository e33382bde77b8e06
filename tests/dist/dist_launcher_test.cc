// The local launcher: each rank's environment, prefixed whole lines, stopping all ranks when
// one fails, forwarding signals, exit statuses, and nothing left behind (processes, fds).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <sstream>
#include <thread>

#include "ember/core/error.h"
#include "ember/dist/launcher.h"
#include "mem_file.h"

namespace ember::dist {
namespace {

using Clock = std::chrono::steady_clock;

using ember::test::MemFile;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct Outcome {
  LaunchResult result;
  std::string out, err;
  double seconds = 0;
};

LaunchOptions shell(int nproc, const std::string& script) {
  LaunchOptions o;
  o.nproc_per_node = nproc;
  o.command = {"sh", "-c", script};
  o.kill_timeout_s = 5;
  return o;
}

Outcome run(LaunchOptions o) {
  MemFile out, err;
  o.out_fd = out.fd();
  o.err_fd = err.fd();
  Outcome r;
  auto t0 = Clock::now();
  r.result = launch(o);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.out = out.read();
  r.err = err.read();
  return r;
}

int open_fd_count() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (::readdir(d) != nullptr) ++n;
  ::closedir(d);
  return n;
}

// No child of this process is left, reaped or not.
void expect_no_children() {
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(Launcher, EachRankGetsItsEnvironment) {
  LaunchOptions o = shell(3, "echo $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE "
                             "$MASTER_ADDR $MASTER_PORT $NCCL_NVLS_ENABLE");
  o.nnodes = 2;
  o.node_rank = 1;
  o.master_addr = "10.0.0.9";
  o.master_port = 1234;
  ::unsetenv("NCCL_NVLS_ENABLE");
  Outcome r = run(o);
  EXPECT_EQ(r.result.exit_status, 0) << r.err;
  std::vector<std::string> lines = lines_of(r.out);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"[rank 3] 3 6 0 3 1 2 10.0.0.9 1234 0",
                                             "[rank 4] 4 6 1 3 1 2 10.0.0.9 1234 0",
                                             "[rank 5] 5 6 2 3 1 2 10.0.0.9 1234 0"}));
  EXPECT_EQ(r.err, "");
  expect_no_children();
}

TEST(Launcher, DefaultsAndAUserNcclSettingWins) {
  ::setenv("NCCL_NVLS_ENABLE", "1", 1);
  ::setenv("RANK", "77", 1);  // the launcher's own variables never leak through
  Outcome r = run(shell(1, "echo $RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT $NCCL_NVLS_ENABLE"));
  ::unsetenv("NCCL_NVLS_ENABLE");
  ::unsetenv("RANK");
  EXPECT_EQ(r.out, "[rank 0] 0 1 127.0.0.1 29500 1\n");
}

TEST(Launcher, RankEnvironment) {
  LaunchOptions o;
  o.nproc_per_node = 2;
  o.nnodes = 3;
  o.node_rank = 2;
  ::unsetenv("NCCL_NVLS_ENABLE");
  std::vector<std::string> env = rank_environment(o, 1, 4);
  for (const char* v : {"RANK=5", "WORLD_SIZE=6", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=2",
                        "GROUP_WORLD_SIZE=3", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500",
                        "TORCHELASTIC_RESTART_COUNT=4", "NCCL_NVLS_ENABLE=0"})
    EXPECT_NE(std::find(env.begin(), env.end(), v), env.end()) << v;
}

TEST(Launcher, OutputLinesStayWholeAndPrefixed) {
  // every line is written in three pieces by two ranks at once; stderr separately; the last
  // line has no newline
  Outcome r = run(shell(2, "i=0; while [ $i -lt 300 ]; do printf 'line-%s-%03d-' $RANK $i; printf 'abcdefghij'; "
                       "printf 'klmnopqrstuvwxyz\\n'; echo \"err-$RANK-$i\" >&2; i=$((i+1)); done; printf tail-$RANK"));
  EXPECT_EQ(r.result.exit_status, 0);
  std::regex line(R"(\[rank ([01])\] (line-\1-\d{3}-abcdefghijklmnopqrstuvwxyz|tail-\1))");
  std::vector<std::string> lines = lines_of(r.out);
  EXPECT_EQ(lines.size(), 602u);
  for (const std::string& l : lines) ASSERT_TRUE(std::regex_match(l, line)) << l;
  EXPECT_EQ(count(r.out, "[rank 0] tail-0\n"), 1u);
  EXPECT_EQ(count(r.out, "[rank 1] tail-1\n"), 1u);
  // each rank's lines keep their order
  for (int rank : {0, 1}) {
    int next = 0;
    for (const std::string& l : lines) {
      if (l.rfind("[rank " + std::to_string(rank) + "] line-", 0) != 0) continue;
      EXPECT_EQ(std::stoi(l.substr(16, 3)), next++);
    }
    EXPECT_EQ(next, 300);
  }
  std::vector<std::string> errs = lines_of(r.err);
  EXPECT_EQ(errs.size(), 600u);
  for (const std::string& l : errs) ASSERT_TRUE(std::regex_match(l, std::regex(R"(\[rank ([01])\] err-\1-\d+)"))) << l;
}

TEST(Launcher, AllRanksSucceedExitsZero) {
  Outcome r = run(shell(4, "exit 0"));
  EXPECT_EQ(r.result.exit_status, 0);
  EXPECT_EQ(r.result.failed_rank, -1);
  EXPECT_EQ(r.err, "");
  expect_no_children();
}

TEST(Launcher, OneFailureStopsASleepingSibling) {
  Outcome r = run(shell(2, "if [ $RANK = 1 ]; then sleep 0.2; exit 3; fi; sleep 30"));
  EXPECT_EQ(r.result.exit_status, 3);
  EXPECT_EQ(r.result.failed_rank, 1);
  EXPECT_EQ(r.result.failed_status, 3);
  EXPECT_LT(r.seconds, 5);
  EXPECT_EQ(r.err, "ember launch: rank 1 exited with status 3\n");
  expect_no_children();
}

TEST(Launcher, ASiblingIgnoringSigtermIsKilledAfterTheTimeout) {
  // rank 0 fails once rank 1 ignores SIGTERM (a marker file says so)
  char dir[] = "/tmp/ember_launch_test_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::string ready = std::string(dir) + "/ready";
  LaunchOptions o = shell(2, "if [ $RANK = 0 ]; then while [ ! -e " + ready + " ]; do sleep 0.01; done; exit 5; fi; "
                             "trap '' TERM; touch " + ready + "; sleep 30");
  o.kill_timeout_s = 0.5;
  Outcome r = run(o);
  EXPECT_EQ(r.result.exit_status, 5);
  EXPECT_EQ(r.result.failed_rank, 0);
  EXPECT_GE(r.seconds, 0.45);
  EXPECT_LT(r.seconds, 4);
  EXPECT_NE(r.err.find("rank 1 still running 0.5 s after SIGTERM; sending SIGKILL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ember launch: rank 0 exited with status 5\n"), std::string::npos) << r.err;
  expect_no_children();
  ::unlink(ready.c_str());
  ::rmdir(dir);
}

TEST(Launcher, ARankEndedByASignalIsReported) {
  Outcome r = run(shell(2, "if [ $RANK = 0 ]; then kill -KILL $$; fi; sleep 30"));
  EXPECT_EQ(r.result.exit_status, 137);
  EXPECT_EQ(r.result.failed_rank, 0);
  EXPECT_EQ(r.err, "ember launch: rank 0 exited with status 137 (signal SIGKILL)\n");
  expect_no_children();
}

TEST(Launcher, RestartsAllRanksAfterAFailure) {
  LaunchOptions o = shell(2, "if [ $RANK = 0 ]; then echo attempt $TORCHELASTIC_RESTART_COUNT; exit 1; fi; sleep 30");
  o.max_restarts = 2;
  Outcome r = run(o);
  EXPECT_EQ(r.result.restarts, 2);
  EXPECT_NE(r.result.exit_status, 0);
  EXPECT_EQ(r.result.exit_status, 1);
  EXPECT_EQ(r.result.failed_rank, 0);
  EXPECT_EQ(r.out, "[rank 0] attempt 0\n[rank 0] attempt 1\n[rank 0] attempt 2\n");
  EXPECT_EQ(count(r.err, "restarting all ranks"), 2u) << r.err;
}

TEST(Launcher, RanksInheritNoDescriptorsAndReadNothing) {
  int leaky = ::open("/dev/null", O_RDONLY);  // deliberately not close-on-exec
  ASSERT_GE(leaky, 3);
  int before = open_fd_count();
  std::string fd = std::to_string(leaky);
  Outcome r = run(shell(1, "if [ -e /proc/$$/fd/" + fd + " ]; then echo leaked; else echo clean; fi; cat; echo read-all"));
  EXPECT_EQ(r.out, "[rank 0] clean\n[rank 0] read-all\n");
  EXPECT_EQ(open_fd_count(), before);  // the launcher closed what it opened
  ::close(leaky);
}

// True while `pid` runs (a zombie waiting for init to reap it does not count).
bool process_running(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return false;
  char state = 0;
  int scanned = std::fscanf(f, "%*d (%*[^)]) %c", &state);
  std::fclose(f);
  return scanned == 1 && state != 'Z' && state != 'X';
}

TEST(Launcher, WhatARankLeavesBehindIsStopped) {
  // the rank exits at once; the background sleep it started holds its stdout
  Outcome r = run(shell(1, "sleep 30 & echo $!"));
  EXPECT_EQ(r.result.exit_status, 0);
  EXPECT_LT(r.seconds, 4);
  ASSERT_EQ(r.out.rfind("[rank 0] ", 0), 0u) << r.out;
  pid_t leftover = std::stoi(r.out.substr(9));
  auto t0 = Clock::now();
  while (process_running(leftover) && Clock::now() - t0 < std::chrono::seconds(3))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(process_running(leftover));
}

TEST(Launcher, BadOptionsNameTheFlag) {
  auto error_of = [](LaunchOptions o) -> std::string {
    try {
      validate(o);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      return e.what();
    }
    return "";
  };
  LaunchOptions ok = shell(1, "true");
  EXPECT_EQ(error_of(ok), "");
  auto with = [&](auto change) {
    LaunchOptions o = ok;
    change(o);
    return error_of(o);
  };
  EXPECT_NE(with([](LaunchOptions& o) { o.nproc_per_node = 0; }).find("--nproc_per_node=0"), std::string::npos);
  EXPECT_NE(with([](LaunchOptions& o) { o.nnodes = 0; }).find("--nnodes=0"), std::string::npos);
  EXPECT_NE(with([](LaunchOptions& o) { o.node_rank = 1; }).find("--node_rank=1"), std::string::npos);
  EXPECT_NE(with([](LaunchOptions& o) { o.master_port = 70000; }).find("--master_port=70000"), std::string::npos);
  EXPECT_NE(with([](LaunchOptions& o) { o.master_port = 0; }).find("--master_port=0"), std::string::npos);
  EXPECT_NE(with([](LaunchOptions& o) { o.master_addr = ""; }).find("--master_addr"), std::string::npos);
  EXPECT_NE(with([](LaunchOptions& o) { o.max_restarts = -1; }).find("--max_restarts=-1"), std::string::npos);
  EXPECT_NE(with([](LaunchOptions& o) { o.kill_timeout_s = -1; }).find("--kill_timeout"), std::string::npos);
  EXPECT_NE(with([](LaunchOptions& o) { o.command.clear(); }).find("PROGRAM"), std::string::npos);
}

TEST(Launcher, MissingOrUnrunnableProgram) {
  LaunchOptions o;
  o.command = {"ember-no-such-program-anywhere"};
  try {
    launch(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("ember-no-such-program-anywhere"), std::string::npos);
  }
  // a file that exists but cannot be executed: the exec fails in the child
  char path[] = "/tmp/ember_launch_noexec_XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  o.command = {path};
  o.nproc_per_node = 2;
  try {
    launch(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIO);
    EXPECT_NE(std::string(e.what()).find("cannot run"), std::string::npos) << e.what();
  }
  ::unlink(path);
  expect_no_children();
}

TEST(Launcher, SignalName) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
}

// Runs launch() in a child process (signals go to it, not to the test), returns its pid.
pid_t launch_in_child(const LaunchOptions& options) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int status = 99;
    try {
      status = launch(options).exit_status;
    } catch (...) {
    }
    ::_exit(status);
  }
  return pid;
}

// Waits until `file` holds `n` copies of `what`, at most 10 s.
bool wait_for(const MemFile& file, const std::string& what, size_t n) {
  for (auto t0 = Clock::now(); Clock::now() - t0 < std::chrono::seconds(10);) {
    if (count(file.read(), what) >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

TEST(Launcher, ForwardsSigtermToEveryRank) {
  MemFile out, err;
  LaunchOptions o = shell(2, "trap 'echo got TERM; exit 0' TERM; echo ready; while :; do sleep 0.05; done");
  o.out_fd = out.fd();
  o.err_fd = err.fd();
  pid_t pid = launch_in_child(o);
  ASSERT_TRUE(wait_for(out, "ready", 2)) << out.read();
  auto t0 = Clock::now();
  ::kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 128 + SIGTERM);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 3);
  EXPECT_EQ(count(out.read(), "[rank 0] got TERM\n"), 1u) << out.read();
  EXPECT_EQ(count(out.read(), "[rank 1] got TERM\n"), 1u) << out.read();
  EXPECT_NE(err.read().find("ember launch: got SIGTERM, forwarding it to the ranks"), std::string::npos) << err.read();
  expect_no_children();
}

TEST(Launcher, ASecondSignalKillsRanksThatIgnoreTheFirst) {
  MemFile out, err;
  LaunchOptions o = shell(2, "trap '' INT TERM; echo ready; while :; do sleep 0.05; done");
  o.kill_timeout_s = 60;
  o.out_fd = out.fd();
  o.err_fd = err.fd();
  pid_t pid = launch_in_child(o);
  ASSERT_TRUE(wait_for(out, "ready", 2)) << out.read();
  auto t0 = Clock::now();
  ::kill(pid, SIGINT);
  ASSERT_TRUE(wait_for(err, "forwarding", 1));
  ::kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 128 + SIGINT);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5);
  EXPECT_NE(err.read().find("killing the ranks"), std::string::npos) << err.read();
  expect_no_children();
}

}  // namespace
}  // namespace ember::dist
