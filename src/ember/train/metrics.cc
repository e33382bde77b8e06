#include "ember/train/metrics.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/io/json.h"

namespace ember::train {

namespace {

// The value of the "step" key of a metrics line, or -1 if it has none.
int64_t line_step(std::string_view line) {
  const std::string_view key = "\"step\":";
  size_t at = line.find(key);
  if (at == std::string_view::npos) return -1;
  at += key.size();
  while (at < line.size() && line[at] == ' ') ++at;
  int64_t step = -1;
  auto r = std::from_chars(line.data() + at, line.data() + line.size(), step);
  return r.ec == std::errc() ? step : -1;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

int terminal_width(std::FILE* f) {
  struct winsize ws {};
  if (::ioctl(::fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 120;
}

}  // namespace

std::string data_wait_hint(double wait_frac, int workers, int cores) {
  if (!(wait_frac > 0.2)) return "";
  std::string s = "the data loader holds training back: " + std::to_string(int(std::lround(wait_frac * 100))) +
                  "% of the step time went to waiting for batches, with --num_workers=" + std::to_string(workers) + " on " +
                  std::to_string(cores) + " cores";
  const std::string measure = " (`ember bench loader DATASET --workers N,M` measures the loader alone)";
  if (workers < cores) return s + "; raise --num_workers (up to " + std::to_string(cores) + ")" + measure;
  return s + "; a smaller --dataset.image_size or pre-decoded images would help" + measure;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = int64_t(std::llround(seconds));
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", (long long)s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
  }
  return buf;
}

MetricsLogger::MetricsLogger(std::filesystem::path output_dir, int64_t total_steps, int64_t resume_from_step,
                             Options options)
    : path_(std::move(output_dir) / options.file), total_steps_(total_steps), options_(std::move(options)) {
  std::error_code ec;
  std::filesystem::create_directories(path_.parent_path(), ec);
  if (ec) fail(ErrorKind::kIO, path_.parent_path().string() + ": cannot create: " + ec.message());
  truncate_after(resume_from_step);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(ErrorKind::kIO, path_.string() + ": cannot open: " + std::strerror(errno));
  if (options_.terminal) {
    bar_ = options_.progress_bar == 1 || (options_.progress_bar < 0 && ::isatty(::fileno(options_.terminal)));
  }
}

MetricsLogger::~MetricsLogger() {
  if (!finished_) finish();
  if (fd_ >= 0) ::close(fd_);
}

// Keeps the complete lines whose step is at most `step` (none for a fresh run).
void MetricsLogger::truncate_after(int64_t step) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return;
  const std::vector<uint8_t> bytes = read_file(path_.string());
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::string kept;
  size_t dropped = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) {  // a torn last line: the process died mid-write
      ++dropped;
      break;
    }
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    const int64_t s = line_step(line);
    if (step > 0 && s >= 0 && s <= step) {
      kept.append(line).push_back('\n');
    } else {
      ++dropped;
    }
  }
  if (dropped == 0) return;
  AtomicFile out(path_.string());
  out.write(kept.data(), kept.size());
  out.commit();
}

void MetricsLogger::log(int64_t step, double loss, const std::vector<Metric>& fields) {
  std::string line = "{\"step\":" + std::to_string(step) + ",\"loss\":";
  io::append_double(line, loss);
  for (const auto& [key, value] : fields) {
    line.push_back(',');
    io::append_json_string(line, key);
    line.push_back(':');
    io::append_double(line, value);
  }
  line += "}\n";
  write_all(line);

  observe(step);
  last_loss_ = loss;
  have_loss_ = true;
  last_fields_ = fields;
  if (!options_.terminal) return;
  if (bar_) {
    draw(true);
  } else {
    std::fprintf(options_.terminal, "%s\n", status_text().c_str());
    std::fflush(options_.terminal);
  }
}

void MetricsLogger::append(const std::string& json_object) { write_all(json_object + "\n"); }

void MetricsLogger::write_all(const std::string& line) {
  const char* p = line.data();
  size_t n = line.size();
  while (n > 0) {
    ssize_t put = ::write(fd_, p, n);
    if (put < 0) {
      if (errno == EINTR) continue;
      fail(ErrorKind::kIO, path_.string() + ": write failed: " + std::strerror(errno));
    }
    p += put;
    n -= size_t(put);
  }
}

void MetricsLogger::tick(int64_t step) {
  observe(step);
  draw(false);
}

void MetricsLogger::print(const std::string& line) {
  if (!options_.terminal) return;
  if (bar_ && bar_drawn_) std::fputs("\r\x1b[K", options_.terminal);
  std::fprintf(options_.terminal, "%s\n", line.c_str());
  if (bar_ && bar_drawn_) draw(true);
  std::fflush(options_.terminal);
}

void MetricsLogger::finish() {
  finished_ = true;
  if (!options_.terminal || !bar_ || !bar_drawn_) return;
  draw(true);
  std::fputc('\n', options_.terminal);
  std::fflush(options_.terminal);
}

double MetricsLogger::eta_s() const {
  if (step_time_ <= 0 || last_step_ < 0) return -1;
  return double(std::max<int64_t>(total_steps_ - last_step_, 0)) * step_time_;
}

void MetricsLogger::observe(int64_t step) {
  const double now = clock_.elapsed_s();
  if (first_step_ < 0) {
    first_step_ = last_step_ = step;
    last_step_at_ = now;
    return;
  }
  if (step <= last_step_) return;
  const double per_step = (now - last_step_at_) / double(step - last_step_);
  step_time_ = step_time_ <= 0 ? per_step : options_.ema_weight * per_step + (1 - options_.ema_weight) * step_time_;
  last_step_ = step;
  last_step_at_ = now;
}

std::string MetricsLogger::status_text() const {
  std::string s = "step " + std::to_string(std::max<int64_t>(last_step_, 0)) + "/" + std::to_string(total_steps_);
  if (bar_) {
    constexpr int kWidth = 20;
    const double frac = total_steps_ > 0 ? std::clamp(double(last_step_) / double(total_steps_), 0.0, 1.0) : 0;
    const int filled = int(frac * kWidth);
    s += " [" + std::string(size_t(filled), '#') + std::string(size_t(kWidth - filled), '.') + "]";
  }
  if (have_loss_) s += " loss " + number(last_loss_);
  for (const std::string& key : options_.shown) {
    for (const auto& [k, v] : last_fields_) {
      if (k == key) s += " " + k + " " + number(v);
    }
  }
  if (step_time_ > 0) s += " | " + number(1.0 / step_time_) + " step/s | eta " + format_duration(eta_s());
  return s;
}

void MetricsLogger::draw(bool force) {
  if (!bar_ || !options_.terminal) return;
  const double now = clock_.elapsed_s();
  if (!force && last_draw_at_ >= 0 && now - last_draw_at_ < 0.1) return;
  last_draw_at_ = now;
  std::string line = status_text();
  const size_t width = size_t(std::max(terminal_width(options_.terminal) - 1, 10));
  if (line.size() > width) line.resize(width);  // one line: a wrapped line cannot be redrawn
  std::fprintf(options_.terminal, "\r%s\x1b[K", line.c_str());
  std::fflush(options_.terminal);
  bar_drawn_ = true;
}

}  // namespace ember::train
