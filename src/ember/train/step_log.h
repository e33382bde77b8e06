// What a training run reports per step: every step's loss and gradient norm stay on the device
// until a log line, a checkpoint or a hook needs them (then one copy brings them all to the
// host), and each --log_freq steps one metrics line (loss, lr, samples/s, tokens/s, MFU,
// data-wait fraction, step time, peak GPU memory) goes to metrics.jsonl and the terminal.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/train/loader.h"
#include "ember/train/metrics.h"
#include "ember/train/train_step.h"

namespace ember::train {

class StepLog {
 public:
  // metrics: the main rank's logger (null on the other ranks). peak_flops: one device's
  // measured peak (0: no MFU). say: prints a line once (the data-wait hint).
  StepLog(std::unique_ptr<MetricsLogger> metrics, at::Device device, double peak_flops, int world_size, int64_t log_freq,
          int loader_workers, std::function<void(const std::string&)> say);

  // After step `step` (updates done) ran: keeps its device values.
  void record(int64_t step, const StepOutput& out);
  // Brings the recorded values to the host; throws kInternal when a loss is not finite.
  void flush();
  bool pending_many() const { return pending_.size() >= 1000; }
  // The rest of the step's figures (this rank's batch, wait and wall time): logs on --log_freq
  // steps (and `last`), else ticks the progress. first_step: where the run started.
  void end_step(int64_t step, int64_t first_step, const TrainBatch& batch, double wait_s, double step_s, double lr, bool last);
  void finish();

  // (step, loss) of every step flushed so far
  const std::vector<std::pair<int64_t, double>>& losses() const { return losses_; }

 private:
  struct Pending {
    int64_t step;
    at::Tensor loss, grad_norm;
  };
  struct Window {  // accumulated between two log lines
    int steps = 0;
    double loss = 0, step_s = 0, wait_s = 0, grad_norm = 0, flops = 0;
    int64_t samples = 0, tokens = 0;
  };

  std::unique_ptr<MetricsLogger> metrics_;
  at::Device device_;
  double peak_;
  int world_;
  int64_t log_freq_;
  int workers_;
  std::function<void(const std::string&)> say_;
  std::vector<Pending> pending_;
  std::vector<std::pair<int64_t, double>> losses_;
  Window window_;
  double step_flops_ = 0;
  bool hint_given_ = false;
};

}  // namespace ember::train
