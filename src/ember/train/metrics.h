// Training metrics: `metrics.jsonl` in the run's output directory, and the terminal.
//
// metrics.jsonl holds one JSON object per logged step, `step` first, then `loss`, then the
// caller's fields in the order given: {"step":200,"loss":0.1234,"lr":2.5e-05,"grad_norm":1.3,...}.
// Numbers are written in their shortest round-trip form; NaN and infinities as NaN / Infinity /
// -Infinity, as Python's json module writes and reads them. Each line is handed to the system
// with one write() as it is logged (it survives the process being killed; it is not fsynced).
//
// On the terminal: when the stream is a TTY, one progress line redrawn in place with \r
// (step/total, a bar, the key numbers, steps/s and ETA), at most 10 times a second; otherwise
// a plain line per log() call. The ETA comes from an exponential moving average of the time
// per step.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/stopwatch.h"

namespace ember::train {


// "45s", "3m07s", "2h05m", "3d04h": short, for ETAs. Negative or non-finite -> "?".
std::string format_duration(double seconds);

// A one-line hint when the loader held the steps back: wait_frac of the step time went to
// waiting for batches (above 20 %), with `workers` loader threads on `cores` usable cores.
// Empty when the wait is below that.
std::string data_wait_hint(double wait_frac, int workers, int cores);

// One named number of a logged step ("lr", "grad_norm", "samples_per_s", "mfu", ...).
using Metric = std::pair<std::string, double>;

class MetricsLogger {
 public:
  struct Options {
    // Where progress goes; nullptr for none.
    std::FILE* terminal = stderr;
    // -1: a bar when `terminal` is a TTY, plain lines otherwise; 0: plain lines; 1: a bar.
    int progress_bar = -1;
    // Weight of the newest step time in the moving average behind the ETA.
    double ema_weight = 0.1;
    // Fields shown on the terminal, after loss, when present in a log() call.
    std::vector<std::string> shown = {"lr", "grad_norm", "samples_per_s", "mfu", "data_wait_frac"};
    // The file under output_dir (another log of the same run, e.g. `ember rl`'s eval.jsonl).
    std::string file = "metrics.jsonl";
  };

  // Opens <output_dir>/metrics.jsonl (Options::file) for appending (creating the directory). resume_from_step
  // is the step of the checkpoint the run continues from: lines with a larger step (logged
  // after that checkpoint by the run that stopped) and a torn last line are dropped, the file
  // being rewritten atomically, so a resumed run never duplicates steps. 0 means a fresh run:
  // an existing file is emptied. total_steps is the run's last step (for the bar and ETA).
  // Throws ember::Error kIO naming the file. Not thread-safe: one logger, one thread (rank 0).
  MetricsLogger(std::filesystem::path output_dir, int64_t total_steps, int64_t resume_from_step,
                Options options);
  MetricsLogger(std::filesystem::path output_dir, int64_t total_steps, int64_t resume_from_step = 0)
      : MetricsLogger(std::move(output_dir), total_steps, resume_from_step, Options()) {}
  ~MetricsLogger();
  MetricsLogger(const MetricsLogger&) = delete;
  MetricsLogger& operator=(const MetricsLogger&) = delete;

  // Appends {"step": step, "loss": loss, fields...} to metrics.jsonl and shows the step.
  // step: the number of optimizer updates done (1 after the first). Throws kIO.
  void log(int64_t step, double loss, const std::vector<Metric>& fields = {});
  // Appends one line as given: a JSON object whose first key is "step" (so that a resumed run
  // trims it like log()'s lines). Nothing is shown. Throws kIO.
  void append(const std::string& json_object);
  // Tells the logger that `step` updates are done (call every step; cheap): feeds the ETA and
  // redraws the bar (rate-limited).
  void tick(int64_t step);
  // Prints a message line without tearing the bar (cleared, printed, redrawn).
  void print(const std::string& line);
  // Redraws the bar one last time and ends its line; called by the destructor if not yet.
  void finish();

  const std::filesystem::path& path() const { return path_; }
  // Seconds per step from the moving average; 0 before two steps were seen.
  double seconds_per_step() const { return step_time_; }
  // Estimated seconds to total_steps; negative when unknown.
  double eta_s() const;
  bool showing_bar() const { return bar_; }

 private:
  void truncate_after(int64_t step);
  void write_all(const std::string& line);
  void observe(int64_t step);
  void draw(bool force);
  std::string status_text() const;

  std::filesystem::path path_;
  int fd_ = -1;
  int64_t total_steps_;
  Options options_;
  bool bar_ = false;
  bool finished_ = false;
  bool bar_drawn_ = false;

  Stopwatch clock_;
  int64_t first_step_ = -1;       // the first step seen by this process
  int64_t last_step_ = -1;        // the latest step seen
  double last_step_at_ = 0;       // clock_ time of last_step_
  double step_time_ = 0;          // moving average of seconds per step
  double last_draw_at_ = -1;
  double last_loss_ = 0;
  bool have_loss_ = false;
  std::vector<Metric> last_fields_;
};

}  // namespace ember::train
