// The one style of progress for long work: on a terminal a bar redrawn in place
// ("label  [=====     ] 12/40  note"), elsewhere (logs, CI) a plain line at most every 10 % of
// the work or 30 s. Not thread-safe: one thread reports.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "ember/core/stopwatch.h"

namespace ember {

class Progress {
 public:
  // total: units of work (> 0); out: where to draw (stderr); tty: -1 asks isatty(out).
  Progress(std::string label, int64_t total, std::FILE* out = stderr, int tty = -1);
  ~Progress();  // ends the bar's line if finish() was not called
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // done units so far (monotonic); note: a short text after the count
  void update(int64_t done, const std::string& note = "");
  // the final line: "label  done/total  note  (12.3 s)"
  void finish(const std::string& note = "");
  bool is_tty() const { return tty_; }

 private:
  void draw(const std::string& note, bool final);

  std::string label_;
  int64_t total_, done_ = 0, last_plain_ = -1;
  std::FILE* out_;
  bool tty_, finished_ = false;
  Stopwatch clock_;
  double last_plain_s_ = 0;
};

}  // namespace ember
