// `ember data check` and `ember data sample`: whole-dataset validation and one training sample.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "ember/core/error.h"
#include "ember/core/output_dir.h"
#include "ember/core/progress.h"
#include "ember/core/file.h"
#include "ember/data/check.h"
#include "ember/data/convert.h"
#include "ember/data/dataset.h"
#include "ember/data/recompute_stats.h"
#include "ember/data/shard_check.h"
#include "ember/data/shard_index.h"
#include "ember/data/stats.h"

namespace ember::cli {

namespace {

void print_problem(const data::Problem& p, const char* prefix) {
  // messages from the readers already start with the file's name
  if (p.message.rfind(p.file, 0) == 0) std::printf("%s%s\n", prefix, p.message.c_str());
  else std::printf("%s%s: %s\n", prefix, p.file.c_str(), p.message.c_str());
}

int run_fix(const std::string& root, bool json) {
  std::vector<std::string> changed = data::fix_totals(root);
  if (changed.empty()) std::fprintf(json ? stderr : stdout, "%s/meta/info.json: totals already agree with the episode and task tables\n", root.c_str());
  for (const std::string& c : changed) std::fprintf(json ? stderr : stdout, "%s/meta/info.json: %s\n", root.c_str(), c.c_str());
  return 0;
}

// One Progress (core/progress.h) per stage of a long job, made at the stage's first report.
class StageProgress {
 public:
  void report(const std::string& stage, int64_t done, int64_t total) {
    if (!bar_ || stage != stage_) {
      if (bar_) bar_->finish();
      bar_.emplace(stage, total);
      stage_ = stage;
    }
    bar_->update(done);
    if (done >= total) bar_->finish();
  }

 private:
  std::optional<Progress> bar_;
  std::string stage_;
};

int run_check(const std::string& root, bool json, double tolerance, bool decode_all, bool fix) {
  if (fix) run_fix(root, json);
  StageProgress progress;
  data::CheckOptions o;
  o.tolerance_s = tolerance;
  o.decode_all = decode_all;
  o.progress = [&](int64_t done, int64_t total) { progress.report("checking files", done, total); };
  o.decode_progress = [&](int64_t done, int64_t total) { progress.report("decoding frames", done, total); };
  data::CheckReport r = data::check_dataset(root, o);
  if (data::is_shard_root(root))
    data::check_shards(root, r, [&](int64_t done, int64_t total) { progress.report("checking shards", done, total); });
  if (json) {
    nlohmann::ordered_json j;
    j["path"] = root;
    j["ok"] = r.problems.empty();
    j["episodes"] = r.episodes;
    j["frames"] = r.frames;
    j["data_files"] = r.data_files;
    j["video_files"] = r.video_files;
    j["frames_decoded"] = r.frames_decoded;
    j["problems"] = nlohmann::json::array();
    for (const auto& p : r.problems) j["problems"].push_back({{"file", p.file}, {"message", p.message}});
    j["warnings"] = nlohmann::json::array();
    for (const auto& p : r.warnings) j["warnings"].push_back({{"file", p.file}, {"message", p.message}});
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (const auto& p : r.warnings) print_problem(p, "warning: ");
    for (const auto& p : r.problems) print_problem(p, "");
    std::printf("%s: %s (%lld episodes, %lld frames, %lld frames decoded, %lld data files, %lld video files)\n",
                root.c_str(), r.problems.empty() ? "ok" : (std::to_string(r.problems.size()) + " problems").c_str(),
                static_cast<long long>(r.episodes), static_cast<long long>(r.frames),
                static_cast<long long>(r.frames_decoded), static_cast<long long>(r.data_files),
                static_cast<long long>(r.video_files));
  }
  return r.problems.empty() ? 0 : 1;
}

// "KEY=a,b,c": offsets in seconds, as LeRobot's delta_timestamps
std::pair<std::string, std::vector<double>> parse_delta(const std::string& arg) {
  auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    fail(ErrorKind::kInvalidArgument, "--delta " + arg + ": expected KEY=OFFSET[,OFFSET...] (seconds)");
  std::vector<double> offsets;
  std::string rest = arg.substr(eq + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string tok = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    double v = std::strtod(tok.c_str(), &end);
    if (tok.empty() || end != tok.c_str() + tok.size() || !std::isfinite(v))
      fail(ErrorKind::kInvalidArgument, "--delta " + arg + ": '" + tok + "' is not a number of seconds");
    offsets.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return {arg.substr(0, eq), offsets};
}

void write_file(const std::string& path, const void* data, size_t n) {
  AtomicFile f(path);
  f.write(data, n);
  f.commit();
}

// --out may replace an earlier sample (sample.json and PNGs) or an empty directory, never a
// directory of other files: the sample replaces DIR as a whole.
void check_sample_dir(const std::string& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::symlink_status(out, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_directory(st)) fail(ErrorKind::kInvalidArgument, "--out " + out + ": exists and is not a directory");
  for (const auto& e : fs::directory_iterator(out, ec)) {
    std::string name = e.path().filename().string();
    bool ours = e.is_regular_file(ec) && (name == "sample.json" || e.path().extension() == ".png");
    if (!ours)
      fail(ErrorKind::kInvalidArgument, "--out " + out + ": holds '" + name +
                                            "', which is not part of an earlier sample; choose an empty or new directory");
  }
}

int run_sample(const std::string& root, int64_t index, const std::string& out, const std::vector<std::string>& deltas) {
  namespace fs = std::filesystem;
  data::DatasetOptions opt;
  for (const std::string& d : deltas) opt.delta_timestamps.insert(parse_delta(d));
  check_sample_dir(out);
  if (fs::exists(root)) check_output_apart(out, root, "--out");  // replacing it must never touch the dataset
  data::Dataset ds(root, opt);
  data::Item item = ds.get(index);  // everything decoded before anything is written
  // the whole sample goes into a new directory that replaces DIR at the end: a failure part
  // way leaves DIR as it was
  AtomicDir dir(out);
  nlohmann::ordered_json j;
  j["index"] = item.index;
  j["episode_index"] = item.episode_index;
  j["frame_index"] = item.frame_index;
  j["timestamp"] = item.timestamp;
  j["task"] = item.task;
  for (const auto& [key, v] : item.values) j["features"][key] = {{"dtype", v.dtype}, {"shape", v.shape}, {"values", v.data}};
  for (const auto& [key, pad] : item.is_pad) j["is_pad"][key + "_is_pad"] = pad;
  for (const auto& [cam, images] : item.images) {
    const auto& d = opt.delta_timestamps.count(cam) ? opt.delta_timestamps.at(cam) : std::vector<double>{0.0};
    for (size_t k = 0; k < images.size(); ++k) {
      std::string name = cam + (images.size() > 1 ? "_t" + std::to_string(k) : "") + ".png";
      std::vector<uint8_t> png = io::encode_png(images[k]);
      write_file(dir.file(name), png.data(), png.size());
      j["images"][cam].push_back({{"file", name}, {"offset_s", d[k]}, {"width", images[k].width}, {"height", images[k].height}});
    }
  }
  std::string text = j.dump(2) + "\n";
  write_file(dir.file("sample.json"), text.data(), text.size());
  dir.commit();
  std::printf("wrote %s/sample.json and %zu camera images (episode %lld, frame %lld, task \"%s\")\n", out.c_str(),
              [&] { size_t n = 0; for (auto& [c, v] : item.images) n += v.size(); return n; }(),
              static_cast<long long>(item.episode_index), static_cast<long long>(item.frame_index), item.task.c_str());
  return 0;
}

int run_stats(const std::string& root, bool write) {
  StageProgress progress;
  auto stats = data::recompute_stats(root, [&](int64_t done, int64_t total) { progress.report("statistics: episodes", done, total); });
  data::Metadata m = data::load_metadata(root);
  // compare with what the dataset holds
  std::printf("%-32s %-6s %14s\n", "feature", "stat", "max |new - stored|");
  for (const auto& [key, fs] : stats) {
    for (const auto& [name, v] : fs) {
      auto f = m.stats.find(key);
      std::string diff = "(not stored)";
      if (f != m.stats.end() && f->second.count(name)) {
        const auto& old = f->second.at(name);
        if (old.size() != v.size()) {
          diff = "(shape differs)";
        } else {
          double d = 0;
          for (size_t i = 0; i < v.size(); ++i) d = std::max(d, std::abs(v[i] - old[i]));
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.3g", d);
          diff = buf;
        }
      }
      std::printf("%-32s %-6s %14s\n", key.c_str(), name.c_str(), diff.c_str());
    }
  }
  if (write) {
    std::string path = m.root + "/meta/stats.json";
    data::write_stats_json(path, stats, m.info.features);
    std::printf("wrote %s\n", path.c_str());
  }
  return 0;
}

int run_convert(const std::string& src, const std::string& dst, double data_mb, double video_mb) {
  StageProgress progress;
  data::ConvertOptions o;
  o.data_file_size_mb = data_mb;
  o.video_file_size_mb = video_mb;
  o.progress = [&](const std::string& stage, int64_t done, int64_t total) { progress.report(stage, done, total); };
  data::ConvertReport r = data::convert_v21_to_v30(src, dst, o);
  std::printf("converted %s (v2.1) to %s (v3.0): %lld episodes, %lld frames, %lld data files, %lld video files\n",
              src.c_str(), dst.c_str(), static_cast<long long>(r.episodes), static_cast<long long>(r.frames),
              static_cast<long long>(r.data_files), static_cast<long long>(r.video_files));
  return 0;
}

}  // namespace

void add_dataset_commands(CLI::App& data, Action& action) {
  struct ConvertArgs {
    std::string src, dst;
    double data_mb = 100, video_mb = 200;
  };
  auto cv = std::make_shared<ConvertArgs>();
  CLI::App* convert = data.add_subcommand("convert", "convert a LeRobot v2.1 dataset to v3.0 (videos joined, not re-encoded)");
  convert->add_option("SRC", cv->src, "v2.1 dataset root")->required();
  convert->add_option("DST", cv->dst, "new v3.0 dataset root (must not exist)")->required();
  convert->add_option("--data_file_size_mb", cv->data_mb, "data file size limit (default 100, as LeRobot)")->check(CLI::PositiveNumber);
  convert->add_option("--video_file_size_mb", cv->video_mb, "video file size limit (default 200, as LeRobot)")->check(CLI::PositiveNumber);
  convert->callback([cv, &action] { action = [cv] { return run_convert(cv->src, cv->dst, cv->data_mb, cv->video_mb); }; });

  struct StatsArgs {
    std::string path;
    bool write = false;
  };
  auto st = std::make_shared<StatsArgs>();
  CLI::App* stats = data.add_subcommand("stats", "recompute normalisation statistics and compare them with meta/stats.json");
  stats->add_option("PATH", st->path, "dataset root")->required();
  stats->add_flag("--write", st->write, "replace meta/stats.json with the recomputed statistics (atomically)");
  stats->callback([st, &action] { action = [st] { return run_stats(st->path, st->write); }; });

  struct CheckArgs {
    std::string path;
    bool json = false, decode_all = false, fix = false;
    double tolerance = 1e-4;
  };
  auto ca = std::make_shared<CheckArgs>();
  CLI::App* check = data.add_subcommand("check", "validate every file of a LeRobot dataset; exit 1 if any problem");
  check->add_option("PATH", ca->path, "dataset root")->required();
  check->add_flag("--json", ca->json, "print one JSON object");
  check->add_option("--tolerance_s", ca->tolerance, "timestamp tolerance in seconds (default 1e-4, as LeRobot)")
      ->check(CLI::PositiveNumber);
  check->add_flag("--decode_all", ca->decode_all,
                  "decode every video frame (default: each video's first frame and each episode's first and last)");
  check->add_flag("--fix", ca->fix,
                  "first rewrite meta/info.json's total_episodes, total_frames and total_tasks from the episode and "
                  "task tables (atomically), then check");
  check->callback([ca, &action] {
    action = [ca] { return run_check(ca->path, ca->json, ca->tolerance, ca->decode_all, ca->fix); };
  });

  struct SampleArgs {
    std::string path, out;
    int64_t index = 0;
    std::vector<std::string> deltas;
  };
  auto sa = std::make_shared<SampleArgs>();
  CLI::App* sample = data.add_subcommand("sample", "write one training sample: sample.json and a PNG per camera and offset");
  sample->add_option("PATH", sa->path, "dataset root")->required();
  sample->add_option("--index", sa->index, "global frame index")->required()->check(CLI::NonNegativeNumber);
  sample->add_option("--out", sa->out, "output directory")->required();
  sample->add_option("--delta", sa->deltas, "KEY=OFFSETS: delta timestamps in seconds, e.g. action=0,0.0333 (repeatable)");
  sample->callback([sa, &action] { action = [sa] { return run_sample(sa->path, sa->index, sa->out, sa->deltas); }; });
}

}  // namespace ember::cli
