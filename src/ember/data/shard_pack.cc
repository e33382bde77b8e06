#include "ember/data/shard_pack.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <set>

#include "ember/core/error.h"
#include "ember/core/output_dir.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/core/thread_pool.h"
#include "ember/data/dataset.h"
#include "ember/data/dataset_writer.h"
#include "ember/io/jpeg.h"
#include "ember/io/resize.h"

namespace ember::data {

namespace fs = std::filesystem;

namespace {

const std::set<std::string> kStandard = {"timestamp", "frame_index", "episode_index", "index", "task_index"};

void check_options(const PackOptions& o) {
  auto bad = [](const std::string& flag, const std::string& why) { fail(ErrorKind::kInvalidArgument, "ember data pack: " + flag + ": " + why); };
  if (o.image_size < 8 || o.image_size > 4096) bad("--image_size=" + std::to_string(o.image_size), "must be in 8..4096");
  if (o.jpeg_quality < 1 || o.jpeg_quality > 100) bad("--jpeg_quality=" + std::to_string(o.jpeg_quality), "must be in 1..100");
  if (!(o.shard_mb > 0) || !std::isfinite(o.shard_mb)) bad("--shard_mb", "must be positive");
  if (o.rows_per_group < 1) bad("--rows_per_group=" + std::to_string(o.rows_per_group), "must be >= 1");
  if (o.piece_bytes < 4096) bad("piece_bytes", "must be at least 4096");
  if (o.threads > kMaxThreads) bad("--threads=" + std::to_string(o.threads), "must be in 0.." + std::to_string(kMaxThreads) + " (0: one per core)");
}

// The shards' features: the source's user features, cameras as JPEG images of the packed size.
std::vector<Feature> shard_features(const Metadata& meta, int size) {
  std::vector<Feature> out;
  for (const Feature& f : meta.info.features) {
    if (kStandard.count(f.key)) continue;
    if (f.dtype == "string") {
      std::fprintf(stderr, "ember data pack: note: string feature '%s' is not packed (training reads none)\n", f.key.c_str());
      continue;
    }
    Feature g = f;
    if (f.is_camera()) {
      g.dtype = "image";
      g.shape = {size, size, 3};
      g.names = {"height", "width", "channel"};
      g.video = {};
    }
    out.push_back(g);
  }
  return out;
}

// Mean absolute error and squared error (pixel levels) of a JPEG round trip.
struct ErrorSum {
  double abs = 0, sq = 0, pixels = 0, bytes = 0;
  int64_t frames = 0;
  void add(const io::Image& a, int quality) {
    auto jpeg = io::encode_jpeg(a, quality);
    io::Image b = io::decode_jpeg(jpeg.data(), jpeg.size(), "JPEG round trip");
    for (size_t i = 0; i < a.rgb.size(); ++i) {
      double d = double(a.rgb[i]) - double(b.rgb[i]);
      abs += std::abs(d);
      sq += d * d;
    }
    pixels += double(a.rgb.size());
    bytes += double(jpeg.size());
    frames += 1;
  }
  nlohmann::json to_json() const {
    if (frames == 0) return nlohmann::json::object();
    double mse = sq / pixels;
    return {{"frames", frames},
            {"mean_abs_error", abs / pixels},
            {"psnr_db", mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 99.0},
            {"bytes_per_frame", bytes / double(frames)}};
  }
};

struct PackedFrame {
  Frame frame;
  std::vector<io::Image> measured;  // images whose JPEG error is measured
};

PackedFrame pack_frame(const Dataset& ds, const std::vector<Feature>& features, int64_t index, int size, bool measure) {
  Item item = ds.get(index);
  PackedFrame p;
  p.frame.timestamp = item.timestamp;
  p.frame.task = item.task;
  for (const Feature& f : features) {
    if (f.is_camera()) {
      auto it = item.images.find(f.key);
      if (it == item.images.end() || it->second.empty())
        fail_corrupt(ds.meta().root + ": frame " + std::to_string(index) + " has no image for camera '" + f.key + "'");
      io::Image im = io::resize_bilinear(it->second.front(), size, size);
      if (measure) p.measured.push_back(im);
      p.frame.images[f.key] = std::move(im);
    } else {
      p.frame.values[f.key] = item.values.at(f.key).data;
    }
  }
  return p;
}

// Every file of the finished dataset at root, indexed.
ShardIndex index_files(const std::string& root, const Metadata& meta, uint64_t piece_bytes) {
  ShardIndex index;
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;  // data file -> [first, end)
  for (const Episode& e : meta.episodes) {
    std::string rel = fs::relative(meta.data_file(e), root).string();
    auto [it, fresh] = ranges.emplace(rel, std::make_pair(e.from_index, e.to_index));
    if (!fresh) it->second = {std::min(it->second.first, e.from_index), std::max(it->second.second, e.to_index)};
  }
  for (const auto& [rel, range] : ranges) {
    ShardFile f = describe_file(root, rel, piece_bytes);
    f.first_index = range.first;
    f.rows = range.second - range.first;
    index.shards.push_back(std::move(f));
  }
  std::sort(index.shards.begin(), index.shards.end(), [](const ShardFile& a, const ShardFile& b) { return a.first_index < b.first_index; });
  std::vector<std::string> metas;
  for (const auto& e : fs::recursive_directory_iterator(root + "/meta"))
    if (e.is_regular_file()) metas.push_back(fs::relative(e.path(), root).string());
  std::sort(metas.begin(), metas.end());
  for (const std::string& rel : metas) {
    ShardFile f = describe_file(root, rel, piece_bytes);
    f.pieces.clear();
    index.meta.push_back(f);
  }
  return index;
}

}  // namespace

ShardIndex pack_shards(const std::string& src, const std::string& dst, const PackOptions& options) {
  check_options(options);
  check_output_apart(dst, src, "ember data pack: DST");  // before anything is touched
  if (fs::exists(dst) && !options.overwrite)
    fail(ErrorKind::kInvalidArgument, "ember data pack: " + dst + ": already exists (pass --overwrite to replace it)");
  // the source as the policy reads it: video frames scaled by the decoder, images here
  DatasetOptions dopt;
  dopt.image_width = dopt.image_height = options.image_size;
  dopt.threads = 1;
  Dataset ds(src, dopt);
  const Metadata& meta = ds.meta();
  const std::vector<Feature> features = shard_features(meta, options.image_size);

  AtomicDir out(dst);
  WriterOptions wo;
  wo.overwrite = true;  // the AtomicDir's temporary directory exists already
  wo.codec = io::parquet::Codec::kUncompressed;  // JPEG does not compress further; numbers are few
  wo.jpeg_quality = options.jpeg_quality;
  wo.rows_per_group = options.rows_per_group;
  wo.data_file_size_mb = options.shard_mb;
  std::string tmp = out.file("");
  tmp.pop_back();  // the temporary directory itself
  auto writer = DatasetWriter::create(tmp, meta.info.fps, features, meta.info.robot_type, wo);

  ThreadPool pool(options.threads);
  ErrorSum error;
  const int64_t total = meta.num_frames();
  int64_t done = 0;
  for (const Episode& e : meta.episodes) {
    // the episode's frames decoded and resized on the pool, added in order, a window at a time
    constexpr int64_t kWindow = 64;
    for (int64_t at = e.from_index; at < e.to_index; at += kWindow) {
      std::vector<std::future<PackedFrame>> jobs;
      for (int64_t i = at; i < std::min(e.to_index, at + kWindow); ++i) {
        const bool measure = options.error_every > 0 && i % options.error_every == 0;
        jobs.push_back(pool.submit([&, i, measure] { return pack_frame(ds, features, i, options.image_size, measure); }));
      }
      for (auto& j : jobs) {
        PackedFrame p = j.get();
        for (const io::Image& im : p.measured) error.add(im, options.jpeg_quality);
        writer.add_frame(p.frame);
        options.progress ? options.progress(++done, total) : void(++done);
      }
    }
    writer.save_episode();
  }
  writer.finalize();

  // the source's statistics, so that normalisation matches training on the source exactly
  if (fs::exists(meta.root + "/meta/stats.json")) write_json_file(out.file("meta/stats.json"), read_json_file(meta.root + "/meta/stats.json"));
  Metadata packed = load_metadata(tmp);
  ShardIndex index = index_files(tmp, packed, options.piece_bytes);
  index.image_size = options.image_size;
  index.jpeg_quality = options.jpeg_quality;
  index.rows_per_group = options.rows_per_group;
  index.piece_bytes = options.piece_bytes;
  index.source = fs::absolute(src).lexically_normal().string();
  index.jpeg_error = error.to_json();
  write_json_file(out.file("meta/shards.json"), index.to_json());
  out.commit();
  return index;
}

}  // namespace ember::data
