// The trainer's Collectives on PyTorch's c10d: rendezvous through a TCPStore (rank 0 serves it at
// MASTER_ADDR:MASTER_PORT), NCCL on CUDA devices (one GPU per process), Gloo on CPUs.
//
// Gradients are summed in buckets (~25 MB: flattened, all-reduced asynchronously; the parameters'
// gradients then are views of their bucket, as DDP's gradient_as_bucket_view, so nothing is
// copied back).
// After attach_gradients(), a post-accumulate-grad hook on every parameter counts the gradients
// of the step's last backward pass; a bucket's all-reduce starts as soon as it is complete (in
// bucket order, parameters in reverse, as backward produces them), so communication overlaps
// the rest of the backward pass; reduce_gradients() makes the GPU's stream wait for all of them
// (on NCCL the host does not block). The host's scalars and barriers go over a second group, Gloo on the CPU, so they never wait for the GPU's queue. Every
// collective is bounded by the timeout: a rank that dies or stalls makes the others throw Error
// naming the rank(s) that fell behind (each rank records its progress in the store at every
// collective), never hang.
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <memory>

#include "ember/dist/env.h"
#include "ember/dist/collectives.h"

namespace ember::dist {

// Bytes per gradient bucket (PyTorch DDP's default bucket_cap_mb is 25).
inline constexpr int64_t kBucketBytes = 25 << 20;

// Joins the job described by env (collective: every rank calls it; returns once all have joined)
// and returns its collectives, for device (CUDA: NCCL on device, Gloo for the host's scalars;
// CPU: Gloo). For NCCL it sets NCCL_NVLS_ENABLE=0 unless the environment sets it, and gives NCCL's
// watchdog twice the timeout, so the host group's collectives (one every step) name a dead rank
// first; a build without Gloo's headers waits for NCCL on the host instead, with the timeout. Gloo
// binds to the local address that routes to env.master_addr (GLOO_SOCKET_IFNAME, when set,
// names the interface instead). Throws Error kIO when the rendezvous does not complete within
// timeout (naming MASTER_ADDR:MASTER_PORT), kUnsupported when this build lacks the backend.
// The result is used from one thread at a time. bf16_gradients: fp32 gradient buckets are summed
// as bf16 copies, then written back (half the traffic; PyTorch DDP's bf16_compress_hook).
std::shared_ptr<Collectives> make_collectives(const DistEnv& env, const at::Device& device,
                                                     std::chrono::milliseconds timeout, int64_t bucket_bytes = kBucketBytes,
                                                     bool bf16_gradients = false);

// How gradient syncs went (reduce_gradients after attach_gradients): buckets all-reduced, and
// how many of them started inside the backward pass (overlapped) rather than after it.
struct GradSyncStats {
  int64_t syncs = 0, buckets = 0, launched_in_backward = 0;
};
// Zeros for collectives not made by make_collectives.
GradSyncStats grad_sync_stats(const Collectives& collectives);

// Groups tensors (same device, any dtypes) into buckets of at most `bytes` (a larger tensor is a
// bucket of its own), each of one dtype, in order. Returns index lists into tensors.
std::vector<std::vector<size_t>> make_buckets(const std::vector<at::Tensor>& tensors, int64_t bytes);

// This machine's IPv4/IPv6 address from which packets to host leave (a connected UDP socket's
// local address; nothing is sent). "127.0.0.1" for a loopback host. Throws Error kIO naming the
// host when it does not resolve or no route exists.
std::string local_address_towards(const std::string& host, int port);

}  // namespace ember::dist
