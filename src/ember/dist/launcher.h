// A local launcher like torchrun, behind `ember launch`: starts this node's ranks with the
// torchrun environment, prefixes their output with the rank, forwards signals, and stops all
// ranks when one fails.
#pragma once

#include <unistd.h>

#include <string>
#include <vector>

namespace ember::dist {

struct LaunchOptions {
  int nproc_per_node = 1;                  // ranks started on this node
  int nnodes = 1;                          // nodes in the job
  int node_rank = 0;                       // this node, in [0, nnodes)
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR given to every rank
  int master_port = 29500;                 // MASTER_PORT, in [1, 65535]
  int max_restarts = 0;     // after a failure, restart all local ranks this many times
  double kill_timeout_s = 10;  // SIGTERM -> SIGKILL grace period when stopping ranks
  // The program and its arguments. A name without '/' is searched in PATH.
  std::vector<std::string> command;
  // Where the ranks' prefixed stdout / stderr and the launcher's own messages go.
  int out_fd = STDOUT_FILENO;
  int err_fd = STDERR_FILENO;
};

struct LaunchResult {
  int exit_status = 0;    // what the launcher should exit with (see launch())
  int failed_rank = -1;   // global rank whose failure stopped the job, -1 if none
  int failed_status = 0;  // its exit code, or 128 + signal number when a signal ended it
  int signal = 0;         // SIGINT / SIGTERM the launcher received (and forwarded), 0 if none
  int restarts = 0;       // restarts done
};

// Throws Error kInvalidArgument naming the flag (--nproc_per_node, --nnodes, --node_rank,
// --master_addr, --master_port, --max_restarts, --kill_timeout) or the missing command.
void validate(const LaunchOptions& options);

// The variables rank `local_rank` gets on top of the launcher's environment: RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, and
// NCCL_NVLS_ENABLE=0 unless the environment already sets it. As "NAME=value" strings.
std::vector<std::string> rank_environment(const LaunchOptions& options, int local_rank, int restart_count);

// Runs the job on this node and returns when every local rank has exited.
// - Each rank runs in its own process group (signals reach its children too) with stdin
//   from /dev/null, no inherited descriptors beyond 0-2, and SIGKILL as its parent-death
//   signal; each output line is written whole as "[rank R] line" (a final partial line is
//   completed with a newline; a line over 64 KiB is cut). One second after the last rank
//   exits, whatever of its process group still holds its output gets SIGTERM.
// - The first SIGINT/SIGTERM is forwarded to every rank; a second one kills them (SIGKILL).
// - When a rank exits non-zero or by a signal, the others get SIGTERM, then SIGKILL after
//   kill_timeout_s; one line "ember launch: rank R exited with status S[ (signal NAME)]" goes
//   to err_fd. With restarts left, all ranks start again instead.
// - exit_status: 0 when all ranks exit 0; else the failing rank's exit code (128 + signal
//   number when a signal ended it); 128 + signal number when the launcher was interrupted.
// Throws Error kInvalidArgument (see validate), kNotFound when the program is not found,
// kIO when a process cannot be started (ranks already running are killed first).
// Installs handlers for SIGINT, SIGTERM, SIGCHLD and ignores SIGPIPE while it runs, then
// restores them: one launch at a time per process, from the main thread.
LaunchResult launch(const LaunchOptions& options);

// This executable's path (/proc/self/exe), for running `ember` as the ranks' program.
std::string current_executable();

// "SIGTERM" for SIGTERM, "signal 77" for numbers without a name.
std::string signal_name(int signal);

}  // namespace ember::dist
