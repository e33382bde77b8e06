#include "ember/dist/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <string_view>
#include <utility>

#include "ember/core/error.h"

extern char** environ;

namespace ember::dist {

namespace {

using Clock = std::chrono::steady_clock;

// A file descriptor owned by one object.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

[[noreturn]] void fail_errno(const std::string& what) {
  fail(ErrorKind::kIO, what + ": " + std::strerror(errno));
}

std::pair<Fd, Fd> make_pipe() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) fail_errno("cannot create a pipe");
  return {Fd(p[0]), Fd(p[1])};
}

// Writes everything, retrying on EINTR and waiting when the descriptor is non-blocking and
// full. Gives up silently when the reader is gone: the ranks' output must never stop the job.
void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 100);
        continue;
      }
      return;
    }
    data.remove_prefix(size_t(n));
  }
}

// Splits one rank stream into lines and writes each whole, behind the rank's prefix.
class LineWriter {
 public:
  LineWriter(std::string prefix, int fd) : prefix_(std::move(prefix)), fd_(fd) {}

  void feed(std::string_view data) {
    pending_.append(data);
    std::string out;
    size_t start = 0;
    for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1)
      out.append(prefix_).append(pending_, start, nl + 1 - start);
    pending_.erase(0, start);
    // a line this long is cut rather than held without bound
    if (pending_.size() >= kMaxLine) {
      out.append(prefix_).append(pending_).push_back('\n');
      pending_.clear();
    }
    if (!out.empty()) write_all(fd_, out);
  }

  // The last line, when the stream ended without a newline.
  void finish() {
    if (pending_.empty()) return;
    write_all(fd_, prefix_ + pending_ + "\n");
    pending_.clear();
  }

 private:
  static constexpr size_t kMaxLine = 64 << 10;
  std::string prefix_, pending_;
  int fd_;
};

// --- signals: handlers write the signal number into a pipe that the poll loop watches ---

int g_signal_write_fd = -1;

extern "C" void on_launcher_signal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  ssize_t ignored = ::write(g_signal_write_fd, &b, 1);
  (void)ignored;
  errno = saved;
}

class SignalGuard {
 public:
  SignalGuard() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) fail_errno("cannot create a pipe");
    read_.reset(p[0]);
    write_.reset(p[1]);
    g_signal_write_fd = p[1];
    struct sigaction sa {};
    sa.sa_handler = on_launcher_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    ::sigaction(SIGCHLD, &sa, &old_chld_);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    ::sigaction(SIGPIPE, &ign, &old_pipe_);
  }
  ~SignalGuard() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::sigaction(SIGCHLD, &old_chld_, nullptr);
    ::sigaction(SIGPIPE, &old_pipe_, nullptr);
    g_signal_write_fd = -1;
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;
  int read_fd() const { return read_.get(); }

 private:
  Fd read_, write_;
  struct sigaction old_int_ {}, old_term_ {}, old_chld_ {}, old_pipe_ {};
};

// --- starting a rank ---

// The program's path: as given when it has a '/', else the first executable file in PATH.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), F_OK) != 0)
      fail(ErrorKind::kNotFound, "program " + name + " not found");
    return name;
  }
  const char* env_path = std::getenv("PATH");
  std::string_view path = env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    size_t colon = path.find(':');
    std::string dir(path.substr(0, colon));
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  fail(ErrorKind::kNotFound, "program " + name + " not found in PATH");
}

std::string_view env_name(std::string_view entry) { return entry.substr(0, entry.find('=')); }

// The launcher's environment with the rank's variables replacing any of the same name.
std::vector<std::string> child_environment(const std::vector<std::string>& vars) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view name = env_name(*e);
    bool replaced = std::any_of(vars.begin(), vars.end(), [&](const std::string& v) { return env_name(v) == name; });
    if (!replaced) out.emplace_back(*e);
  }
  out.insert(out.end(), vars.begin(), vars.end());
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Marks every descriptor from 3 up close-on-exec (async-signal-safe: runs between fork and
// exec), so a rank inherits only stdin, stdout and stderr.
void cloexec_from_3() {
#if defined(SYS_close_range)
  constexpr unsigned kCloexec = 1u << 2;  // CLOSE_RANGE_CLOEXEC, Linux 5.11
  if (::syscall(SYS_close_range, 3u, ~0u, kCloexec) == 0) return;
#endif
  long max_fd = ::sysconf(_SC_OPEN_MAX);
  if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
  for (int fd = 3; fd < max_fd; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

// Puts fd on target in the child, clearing close-on-exec even when they are the same number.
void move_fd(int fd, int target) {
  if (fd == target) {
    ::fcntl(fd, F_SETFD, 0);
  } else {
    ::dup2(fd, target);
  }
}

struct Rank {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int wait_status = 0;
  Fd out, err;  // read ends of the rank's stdout and stderr
  LineWriter out_lines, err_lines;

  Rank(int r, int out_fd, int err_fd)
      : rank(r),
        out_lines("[rank " + std::to_string(r) + "] ", out_fd),
        err_lines("[rank " + std::to_string(r) + "] ", err_fd) {}
  bool group_alive() const { return running || out.open() || err.open(); }
};

// Starts one rank; fills pid and the read ends. Throws kIO when fork or exec fails.
void start_rank(Rank& r, const std::string& program, const std::vector<std::string>& command,
                std::vector<std::string> env, int devnull) {
  std::vector<std::string> args = command;
  std::vector<char*> argv = c_strings(args), envp = c_strings(env);
  auto [out_r, out_w] = make_pipe();
  auto [err_r, err_w] = make_pipe();
  auto [exec_r, exec_w] = make_pipe();
  pid_t parent = ::getpid();

  // no handler may run in the child before exec: block everything across fork
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &old);
  pid_t pid = ::fork();
  if (pid == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE}) ::signal(sig, SIG_DFL);
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    move_fd(devnull, 0);
    move_fd(out_w.get(), 1);
    move_fd(err_w.get(), 2);
    cloexec_from_3();
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(program.c_str(), argv.data(), envp.data());
    int e = errno;
    ssize_t ignored = ::write(exec_w.get(), &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    errno = fork_errno;
    fail_errno("cannot start rank " + std::to_string(r.rank));
  }
  ::setpgid(pid, pid);  // also here, so that kill(-pid) works before the child runs
  r.pid = pid;
  r.running = true;
  out_w.reset();
  err_w.reset();
  exec_w.reset();
  // the exec pipe closes on a successful exec, or carries errno
  int exec_errno = 0;
  ssize_t n;
  do n = ::read(exec_r.get(), &exec_errno, sizeof exec_errno);
  while (n < 0 && errno == EINTR);
  if (n == sizeof exec_errno) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.running = false;
    fail(ErrorKind::kIO, "cannot run " + program + ": " + std::strerror(exec_errno));
  }
  ::fcntl(out_r.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(err_r.get(), F_SETFL, O_NONBLOCK);
  r.out = std::move(out_r);
  r.err = std::move(err_r);
}

int status_code(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

bool succeeded(int wait_status) { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

std::string describe_exit(int rank, int wait_status) {
  std::string s = "ember launch: rank " + std::to_string(rank) + " exited with status " +
                  std::to_string(status_code(wait_status));
  if (WIFSIGNALED(wait_status)) s += " (signal " + signal_name(WTERMSIG(wait_status)) + ")";
  return s;
}

// The ranks of one attempt. Whatever happens, the destructor leaves no process behind.
class Job {
 public:
  Job(const LaunchOptions& options, const SignalGuard& signals) : options_(options), signals_(signals) {}
  ~Job() {
    for (Rank& r : ranks_)
      if (r.running) ::kill(-r.pid, SIGKILL);
    for (Rank& r : ranks_)
      if (r.running)
        while (::waitpid(r.pid, &r.wait_status, 0) < 0 && errno == EINTR) {
        }
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  void start(const std::string& program, int restart) {
    Fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!devnull.open()) fail_errno("cannot open /dev/null");
    ranks_.reserve(size_t(options_.nproc_per_node));
    for (int local = 0; local < options_.nproc_per_node; ++local) {
      ranks_.emplace_back(options_.node_rank * options_.nproc_per_node + local, options_.out_fd, options_.err_fd);
      start_rank(ranks_.back(), program, options_.command,
                 child_environment(rank_environment(options_, local, restart)), devnull.get());
    }
  }

  // Runs until every rank has exited and its output is drained. Returns the first failure's
  // rank (or -1) and its wait status; `signal` receives a signal the launcher got.
  std::pair<int, int> supervise(int& signal) {
    int failed = -1, failed_status = 0;
    bool stopping = false, killed = false;
    Clock::time_point deadline{}, all_exited{};
    while (true) {
      bool any_running = std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; });
      if (!any_running && all_exited == Clock::time_point{}) all_exited = Clock::now();
      // after the last exit, leftover children may hold a pipe open: drain a little, then stop
      if (!any_running && Clock::now() - all_exited > std::chrono::seconds(1)) close_all();
      std::vector<pollfd> fds{{signals_.read_fd(), POLLIN, 0}};
      std::vector<std::pair<Rank*, bool>> owners{{nullptr, false}};
      for (Rank& r : ranks_) {
        if (r.out.open()) fds.push_back({r.out.get(), POLLIN, 0}), owners.push_back({&r, false});
        if (r.err.open()) fds.push_back({r.err.get(), POLLIN, 0}), owners.push_back({&r, true});
      }
      if (!any_running && fds.size() == 1) break;

      int timeout_ms = 200;
      if (stopping && !killed) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        timeout_ms = int(std::clamp<long long>(left + 1, 0, timeout_ms));
      }
      int ready = ::poll(fds.data(), fds.size(), timeout_ms);
      if (ready < 0 && errno != EINTR) fail_errno("poll");
      if (ready > 0) {
        if (fds[0].revents & POLLIN) {
          unsigned char sigs[64];
          ssize_t n;
          while ((n = ::read(fds[0].fd, sigs, sizeof sigs)) > 0) {
            for (ssize_t i = 0; i < n; ++i) {
              if (sigs[i] != SIGINT && sigs[i] != SIGTERM) continue;
              if (signal == 0) {
                signal = sigs[i];
                write_all(options_.err_fd, "ember launch: got " + signal_name(signal) + ", forwarding it to the ranks\n");
                signal_groups(signal);
                if (!stopping) deadline = Clock::now() + grace();
                stopping = true;
              } else if (!killed) {
                write_all(options_.err_fd, "ember launch: got a second signal, killing the ranks\n");
                signal_groups(SIGKILL);
                killed = true;
              }
            }
          }
        }
        for (size_t i = 1; i < fds.size(); ++i)
          if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) drain(*owners[i].first, owners[i].second);
      }

      // reap exited ranks; the first failure stops the rest
      for (Rank& r : ranks_) {
        if (!r.running) continue;
        pid_t got;
        do got = ::waitpid(r.pid, &r.wait_status, WNOHANG);
        while (got < 0 && errno == EINTR);
        if (got != r.pid) continue;
        r.running = false;
        if (!succeeded(r.wait_status) && failed < 0 && !stopping) {
          failed = r.rank;
          failed_status = r.wait_status;
          stopping = true;
          deadline = Clock::now() + grace();
          signal_groups(SIGTERM);
        }
      }
      if (stopping && !killed && Clock::now() >= deadline) {
        for (const Rank& r : ranks_)
          if (r.running)
            write_all(options_.err_fd, "ember launch: rank " + std::to_string(r.rank) + " still running " +
                                           format_seconds(options_.kill_timeout_s) + " after SIGTERM; sending SIGKILL\n");
        signal_groups(SIGKILL);
        killed = true;
      }
    }
    return {failed, failed_status};
  }

 private:
  Clock::duration grace() const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.kill_timeout_s));
  }

  static std::string format_seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", s);
    return buf;
  }

  // Signals each rank's process group (the rank and what it started) while it may be alive.
  void signal_groups(int sig) {
    for (const Rank& r : ranks_)
      if (r.group_alive()) ::kill(-r.pid, sig);
  }

  void drain(Rank& r, bool is_err) {
    Fd& fd = is_err ? r.err : r.out;
    LineWriter& lines = is_err ? r.err_lines : r.out_lines;
    char buf[65536];
    // a bounded amount per call, so that a chatty rank cannot hold up signals and reaping
    for (int chunk = 0; chunk < 16; ++chunk) {
      ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n > 0) {
        lines.feed(std::string_view(buf, size_t(n)));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      lines.finish();  // end of stream (or an error: treat alike)
      fd.reset();
      return;
    }
  }

  // Ends the output of ranks that exited while something they started still holds their
  // pipes: what is left of each rank's process group gets SIGTERM.
  void close_all() {
    for (Rank& r : ranks_) {
      if (r.out.open() || r.err.open()) ::kill(-r.pid, SIGTERM);
      if (r.out.open()) drain(r, false), r.out_lines.finish(), r.out.reset();
      if (r.err.open()) drain(r, true), r.err_lines.finish(), r.err.reset();
    }
  }

  const LaunchOptions& options_;
  const SignalGuard& signals_;
  std::vector<Rank> ranks_;
};

}  // namespace

void validate(const LaunchOptions& o) {
  auto bad = [](const std::string& flag, const std::string& value, const std::string& why) {
    fail(ErrorKind::kInvalidArgument, flag + "=" + value + ": " + why);
  };
  if (o.nproc_per_node < 1) bad("--nproc_per_node", std::to_string(o.nproc_per_node), "must be at least 1");
  if (o.nproc_per_node > 4096) bad("--nproc_per_node", std::to_string(o.nproc_per_node), "must be at most 4096");
  if (o.nnodes < 1) bad("--nnodes", std::to_string(o.nnodes), "must be at least 1");
  if (int64_t(o.nnodes) * o.nproc_per_node > (1 << 24))
    bad("--nnodes", std::to_string(o.nnodes), "too many ranks in total");
  if (o.node_rank < 0 || o.node_rank >= o.nnodes)
    bad("--node_rank", std::to_string(o.node_rank), "must be in [0, --nnodes=" + std::to_string(o.nnodes) + ")");
  if (o.master_addr.empty()) bad("--master_addr", "", "must not be empty");
  if (o.master_port < 1 || o.master_port > 65535)
    bad("--master_port", std::to_string(o.master_port), "not a port number (1-65535)");
  if (o.max_restarts < 0) bad("--max_restarts", std::to_string(o.max_restarts), "must be 0 or more");
  if (!(o.kill_timeout_s >= 0) || o.kill_timeout_s > 1e6)
    bad("--kill_timeout", std::to_string(o.kill_timeout_s), "must be a number of seconds, 0 or more");
  if (o.command.empty() || o.command[0].empty())
    fail(ErrorKind::kInvalidArgument, "missing the program: ember launch [flags] -- PROGRAM [ARGS...]");
}

std::vector<std::string> rank_environment(const LaunchOptions& o, int local_rank, int restart_count) {
  auto var = [](const char* name, const std::string& value) { return std::string(name) + "=" + value; };
  auto num = [&](const char* name, int value) { return var(name, std::to_string(value)); };
  std::vector<std::string> env{
      num("RANK", o.node_rank * o.nproc_per_node + local_rank),
      num("WORLD_SIZE", o.nnodes * o.nproc_per_node),
      num("LOCAL_RANK", local_rank),
      num("LOCAL_WORLD_SIZE", o.nproc_per_node),
      num("GROUP_RANK", o.node_rank),
      num("GROUP_WORLD_SIZE", o.nnodes),
      var("MASTER_ADDR", o.master_addr),
      num("MASTER_PORT", o.master_port),
      num("TORCHELASTIC_RESTART_COUNT", restart_count),
      num("TORCHELASTIC_MAX_RESTARTS", o.max_restarts),
  };
  // NVLink multicast (NVLS) stays off unless the user chose otherwise
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  if (nvls == nullptr) env.push_back("NCCL_NVLS_ENABLE=0");
  return env;
}

LaunchResult launch(const LaunchOptions& options) {
  validate(options);
  std::string program = find_program(options.command[0]);
  SignalGuard signals;
  LaunchResult result;
  while (true) {
    Job job(options, signals);
    job.start(program, result.restarts);
    auto [failed, status] = job.supervise(result.signal);
    if (result.signal != 0) {
      result.exit_status = 128 + result.signal;
      write_all(options.err_fd, "ember launch: stopped by " + signal_name(result.signal) + "\n");
      return result;
    }
    if (failed < 0) return result;
    if (result.restarts < options.max_restarts) {
      ++result.restarts;
      write_all(options.err_fd, describe_exit(failed, status) + "; restarting all ranks (restart " +
                                    std::to_string(result.restarts) + " of " + std::to_string(options.max_restarts) +
                                    ")\n");
      continue;
    }
    result.failed_rank = failed;
    result.failed_status = status_code(status);
    result.exit_status = result.failed_status;
    write_all(options.err_fd, describe_exit(failed, status) + "\n");
    return result;
  }
}

std::string current_executable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) fail_errno("cannot read /proc/self/exe");
  return std::string(buf, size_t(n));
}

std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
  return "signal " + std::to_string(sig);
}

}  // namespace ember::dist
