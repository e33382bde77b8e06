// What `ember train` and `ember rl` say and return when SIGINT or SIGTERM stopped them after a
// step (core/stop_signal.h): the step, the checkpoint, how to go on; 128 + the signal, as a shell
// reports a process ended by it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "ember/core/stop_signal.h"

namespace ember::cli {

inline int report_stopped(const char* command, int sig, int64_t step, const std::string& checkpoint) {
  if (checkpoint.empty())
    std::printf("%s: stopped by %s after step %lld; no checkpoint (--save_checkpoint=false)\n", command, stop_signal_name(sig),
                (long long)step);
  else
    std::printf("%s: stopped by %s after step %lld; checkpoint %s (run the same command with --resume to go on)\n", command,
                stop_signal_name(sig), (long long)step, checkpoint.c_str());
  std::fflush(stdout);
  return 128 + sig;
}

}  // namespace ember::cli
