// Ranks of a data-parallel job as threads of one test process: each joins a Gloo job over
// loopback with its own TCPStore client and process group (rank 0 serves the store).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "ember/dist/process_group.h"

namespace ember::test {

// A TCP port free on loopback a moment ago.
inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// Runs body(rank, collectives) on `world` threads joined into one Gloo job; rethrows the first
// error.
inline void run_ranks(int world, const std::function<void(int, std::shared_ptr<dist::Collectives>)>& body,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30), bool bf16_gradients = false) {
  // c10d's flight recorder is one per process, and ProcessGroupGloo::enqueue records into it from
  // each rank's thread: two ranks in one process raced on its map of process groups and crashed
  // (SIGSEGV in FlightRecorder::recordWithResetEnabled, about 1 run of DistCollectives.* in 10 run
  // in one process, 0 of 60 with the recorder off). A real job has one rank per process. Off
  // here, before the first process group reads it.
  setenv("TORCH_FR_BUFFER_SIZE", "0", /*overwrite=*/0);
  int port = free_port();
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        dist::DistEnv env;
        env.launcher = dist::Launcher::kTorchrun;
        env.rank = env.local_rank = r;
        env.world_size = env.local_world_size = world;
        env.master_port = port;
        body(r, dist::make_collectives(env, at::kCPU, timeout, dist::kBucketBytes, bf16_gradients));
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ember::test
