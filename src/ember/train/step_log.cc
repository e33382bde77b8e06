#include "ember/train/step_log.h"

#include <c10/cuda/CUDACachingAllocator.h>

#include <cmath>

#include "ember/core/error.h"
#include "ember/core/thread_pool.h"

namespace ember::train {

StepLog::StepLog(std::unique_ptr<MetricsLogger> metrics, at::Device device, double peak_flops, int world_size, int64_t log_freq,
                 int loader_workers, std::function<void(const std::string&)> say)
    : metrics_(std::move(metrics)), device_(device), peak_(peak_flops), world_(world_size), log_freq_(log_freq),
      workers_(loader_workers), say_(std::move(say)) {}

void StepLog::record(int64_t step, const StepOutput& out) {
  pending_.push_back({step, out.loss, out.grad_norm});
  step_flops_ = out.flops;
}

void StepLog::flush() {
  if (pending_.empty()) return;
  std::vector<at::Tensor> values;
  for (const auto& p : pending_) values.push_back(p.loss.to(at::kDouble).reshape({1})), values.push_back(p.grad_norm.to(at::kDouble).reshape({1}));
  auto host = at::cat(values).cpu();
  const double* v = host.data_ptr<double>();
  for (size_t i = 0; i < pending_.size(); ++i) {
    const double loss = v[2 * i], norm = v[2 * i + 1];
    if (!std::isfinite(loss))
      throw Error(ErrorKind::kInvalidArgument, "the loss became " + std::to_string(loss) + " at step " + std::to_string(pending_[i].step) +
                                                   ": the run diverged; lower --optimizer.lr (or raise --scheduler.warmup_steps), check the "
                                                   "data with `ember data check`, or resume from an earlier checkpoint");
    losses_.emplace_back(pending_[i].step, loss);
    window_.loss += loss;
    window_.grad_norm += norm;
  }
  pending_.clear();
}

void StepLog::end_step(int64_t step, int64_t first_step, const TrainBatch& batch, double wait_s, double step_s, double lr, bool last) {
  Window& w = window_;
  w.steps++;
  w.step_s += step_s;
  w.wait_s += wait_s;
  w.samples += batch.samples * world_;
  w.tokens += batch.tokens * world_;
  w.flops += step_flops_ * world_;
  if (!metrics_) return;
  if (step % log_freq_ != 0 && !last) return metrics_->tick(step);
  std::vector<Metric> fields = {{"lr", lr},
                                {"grad_norm", w.grad_norm / w.steps},
                                {"samples_per_s", w.samples / w.step_s},
                                {"tokens_per_s", w.tokens / w.step_s},
                                {"mfu", peak_ > 0 ? w.flops / w.step_s / (peak_ * world_) : 0.0},
                                {"data_wait_frac", w.wait_s / w.step_s},
                                {"step_time_s", w.step_s / w.steps}};
  if (device_.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index());
    fields.push_back({"peak_mem_gb", double(stats.allocated_bytes[0].peak) / (1 << 30)});
  }
  metrics_->log(step, w.loss / w.steps, fields);
  // once per run, after the first window (warm-up)
  if (!hint_given_ && step - first_step > log_freq_) {
    auto hint = data_wait_hint(w.wait_s / w.step_s, workers_, usable_cores());
    if (!hint.empty()) say_(hint), hint_given_ = true;
  }
  w = Window{};
}

void StepLog::finish() {
  if (metrics_) metrics_->finish();
}

}  // namespace ember::train
