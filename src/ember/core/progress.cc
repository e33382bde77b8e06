#include "ember/core/progress.h"

#include <unistd.h>

#include <algorithm>

namespace ember {

Progress::Progress(std::string label, int64_t total, std::FILE* out, int tty)
    : label_(std::move(label)), total_(std::max<int64_t>(1, total)), out_(out),
      tty_(tty < 0 ? ::isatty(::fileno(out)) != 0 : tty != 0) {}

Progress::~Progress() {
  if (!finished_ && tty_ && done_ > 0) std::fputc('\n', out_);
}

void Progress::update(int64_t done, const std::string& note) {
  done_ = std::clamp<int64_t>(done, 0, total_);
  if (tty_) return draw(note, false);
  // plain: a line per 10 % step crossed, or after 30 s without one
  const int64_t tenth = done_ * 10 / total_;
  if (tenth > last_plain_ || clock_.elapsed_s() - last_plain_s_ > 30) {
    last_plain_ = tenth;
    last_plain_s_ = clock_.elapsed_s();
    draw(note, false);
  }
}

void Progress::finish(const std::string& note) {
  if (finished_) return;
  finished_ = true;
  draw(note, true);
}

void Progress::draw(const std::string& note, bool final) {
  std::string line = label_ + "  ";
  if (tty_ && !final) {
    constexpr int kWidth = 24;
    const int filled = int(done_ * kWidth / total_);
    line += "[" + std::string(filled, '=') + std::string(kWidth - filled, ' ') + "] ";
  }
  line += std::to_string(done_) + "/" + std::to_string(total_);
  if (!note.empty()) line += "  " + note;
  if (final) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "  (%.1f s)", clock_.elapsed_s());
    line += buf;
  }
  if (tty_) std::fprintf(out_, "\r%s\x1b[K%s", line.c_str(), final ? "\n" : "");
  else std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

}  // namespace ember
