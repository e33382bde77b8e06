// One rank of a distributed job (`ember launch`, torchrun, srun, mpirun) for the commands that
// train: the device, the collectives, and how a failure ends the process.
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "ember/dist/collectives.h"
#include "ember/dist/env.h"

namespace ember::cli {

struct RankOptions {
  std::chrono::milliseconds timeout{600000};  // a collective or the rendezvous waiting longer fails
  int64_t bucket_bytes = 25 << 20;
  bool bf16_gradients = false;
  int gpus_per_rank = 1;  // CUDA: the rank's collectives on cuda:(gpus_per_rank x LOCAL_RANK)
};

// Joins the job env describes (env.is_distributed()) on this rank's device: its first GPU,
// cuda:(gpus_per_rank x LOCAL_RANK) (NCCL), when device_flag resolves to CUDA, else the CPU (Gloo); rank 0 prints
// one line naming the job to stderr. Then runs body. An Error (from the join or from body) prints
// "ember COMMAND: rank R: message" and ends the process at once with status 2 (a user error) or
// 70: a failed collective can leave c10d's threads waiting on peers, so no destructors run.
// Returns 0 when body returns.
int run_rank(const std::string& command, const dist::DistEnv& env, const std::string& device_flag, const RankOptions& options,
             const std::function<void(std::shared_ptr<dist::Collectives>, at::Device)>& body);

}  // namespace ember::cli
