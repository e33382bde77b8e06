#include "ember/train/zero_adamw.h"

#include <ATen/core/grad_mode.h>

#include <cstdio>

#include "ember/core/error.h"

namespace ember::train {

std::vector<int> shard_owners(const std::vector<int64_t>& numels, int world) {
  int64_t total = 0;
  for (int64_t n : numels) total += n;
  std::vector<int> owner(numels.size(), 0);
  int64_t before = 0;
  for (size_t i = 0; i < numels.size(); ++i) {
    // the rank whose share [r * total / world, (r+1) * total / world) holds this parameter's middle
    int64_t middle = before + numels[i] / 2;
    owner[i] = total > 0 ? int(std::min<int64_t>(world - 1, middle * world / total)) : 0;
    before += numels[i];
  }
  return owner;
}

ZeroAdamW::ZeroAdamW(model::NamedTensors params, AdamWOptions options, std::shared_ptr<Collectives> collectives)
    : params_(std::move(params)), collectives_(std::move(collectives)) {
  if (!collectives_) throw Error(ErrorKind::kInternal, "ZeroAdamW needs collectives");
  std::vector<int64_t> numels;
  for (const auto& [name, p] : params_) numels.push_back(p.numel());
  owner_ = shard_owners(numels, collectives_->world_size());
  model::NamedTensors mine;
  for (size_t i = 0; i < params_.size(); ++i)
    if (owner_[i] == collectives_->rank()) mine.push_back(params_[i]);
  local_ = std::make_unique<AdamW>(std::move(mine), options);
}

std::vector<at::Tensor> ZeroAdamW::owned_by(int rank) const {
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < params_.size(); ++i)
    if (owner_[i] == rank) out.push_back(params_[i].second.detach());
  return out;
}

void ZeroAdamW::step(double lr, const at::Tensor& grad_multiplier) {
  local_->step(lr, grad_multiplier);
  // all-gather of the updated shards: each owner's parameters broadcast in buckets
  at::NoGradGuard no_grad;
  for (int r = 0; r < collectives_->world_size(); ++r) {
    auto shard = owned_by(r);
    if (!shard.empty()) collectives_->broadcast(shard, r);
  }
}

void ZeroAdamW::zero_grad() {
  for (auto& [name, p] : params_)
    if (p.grad().defined()) p.mutable_grad() = at::Tensor();
}

model::NamedTensors ZeroAdamW::state() const {
  std::map<std::string, at::Tensor> mine;
  for (auto& [name, t] : local_->state()) mine.emplace(name, t);
  model::NamedTensors full;
  const char* kinds[] = {".exp_avg", ".exp_avg_sq", ".step"};
  for (int r = 0; r < collectives_->world_size(); ++r) {
    std::vector<at::Tensor> shard;
    std::vector<std::string> names;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (owner_[i] != r) continue;
      const auto& [name, p] = params_[i];
      for (const char* k : kinds) {
        names.push_back(name + k);
        if (r == collectives_->rank()) {
          shard.push_back(mine.at(name + k).clone());
        } else if (std::string(k) == ".step") {
          shard.push_back(at::zeros({}, p.options().dtype(at::kFloat)));
        } else {
          shard.push_back(at::zeros_like(p, at::MemoryFormat::Contiguous).detach());
        }
      }
    }
    if (shard.empty()) continue;
    collectives_->broadcast(shard, r);
    for (size_t j = 0; j < shard.size(); ++j) full.emplace_back(names[j], shard[j]);
  }
  // AdamW's order: parameter by parameter
  std::map<std::string, at::Tensor> by_name(full.begin(), full.end());
  model::NamedTensors ordered;
  for (const auto& [name, p] : params_)
    for (const char* k : kinds) ordered.emplace_back(name + k, by_name.at(name + k));
  return ordered;
}

void ZeroAdamW::load_state(const std::map<std::string, at::Tensor>& tensors, const std::string& what) {
  std::map<std::string, at::Tensor> mine;
  for (const auto& [name, t] : local_->state()) {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw Error(ErrorKind::kInvalidArgument, what + ": missing tensor " + name);
    mine.emplace(name, it->second);
  }
  local_->load_state(mine, what);
}

std::unique_ptr<Optimizer> make_optimizer(model::NamedTensors params, AdamWOptions options, int64_t zero,
                                          std::shared_ptr<Collectives> collectives) {
  if (zero == 1 && collectives && collectives->world_size() > 1)
    return std::make_unique<ZeroAdamW>(std::move(params), options, std::move(collectives));
  return std::make_unique<AdamW>(std::move(params), options);
}

std::string optimizer_memory_line(const Optimizer& optimizer, const model::NamedTensors& params, int world) {
  int64_t replicated = 0;
  for (const auto& [name, p] : params) replicated += 2 * int64_t(p.nbytes()) + int64_t(sizeof(float));
  int64_t local = optimizer.local_state_bytes();
  char line[256];
  std::snprintf(line, sizeof(line),
                "optimizer state per rank: %.2f MiB sharded (ZeRO-1 over %d ranks, rank 0's shard) vs %.2f MiB replicated: %.1f%% saved",
                double(local) / (1 << 20), world, double(replicated) / (1 << 20),
                replicated > 0 ? 100.0 * double(replicated - local) / double(replicated) : 0.0);
  return line;
}

}  // namespace ember::train
