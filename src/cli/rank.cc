#include "cli/rank.h"

#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>

#include "ember/core/error.h"
#include "ember/model/device.h"
#include "ember/dist/process_group.h"

namespace ember::cli {

int run_rank(const std::string& command, const dist::DistEnv& env, const std::string& device_flag, const RankOptions& options,
             const std::function<void(std::shared_ptr<dist::Collectives>, at::Device)>& body) {
  try {
    const bool cuda = model::resolve_device(device_flag).is_cuda();
    const int last_gpu = (env.local_rank + 1) * options.gpus_per_rank - 1;
    if (cuda && last_gpu >= int(torch::cuda::device_count()))
      fail(ErrorKind::kInvalidArgument, "LOCAL_RANK=" + std::to_string(env.local_rank) + " (" + std::to_string(options.gpus_per_rank) +
                                            " GPU(s) a rank): this node has only " + std::to_string(torch::cuda::device_count()) +
                                            " CUDA device(s)");
    at::Device device = cuda ? at::Device(at::kCUDA, c10::DeviceIndex(env.local_rank * options.gpus_per_rank)) : at::Device(at::kCPU);
    if (env.rank == 0) std::fprintf(stderr, "ember %s: %s, %s\n", command.c_str(), dist::describe(env).c_str(), cuda ? "NCCL" : "Gloo");
    body(dist::make_collectives(env, device, options.timeout, options.bucket_bytes, options.bf16_gradients), device);
    return 0;
  } catch (const Error& e) {
    std::string what = e.what();
    if (what.rfind("rank ", 0) != 0) what = "rank " + std::to_string(env.rank) + ": " + what;
    std::fprintf(stderr, "ember %s: %s\n", command.c_str(), what.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(e.is_user_error() ? 2 : 70);
  }
}

}  // namespace ember::cli
