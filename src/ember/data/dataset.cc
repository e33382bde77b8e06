#include "ember/data/dataset.h"

#include <cmath>
#include <cstdio>

#include "ember/core/error.h"
#include "ember/data/check.h"
#include "ember/data/meta_writer.h"
#include "ember/io/jpeg.h"
#include "ember/io/parquet/reader.h"
#include "ember/io/resize.h"
#include "ember/io/video/video_decoder.h"

namespace ember::data {

struct Dataset::EpisodeRows {
  int64_t episode = 0;
  io::Table table;  // rows of the episode, frame 0 first
};

struct Dataset::ImageGroup {
  std::string path;
  int group = 0;
  int64_t first_row = 0;  // of the group, within the file
  io::Table table;        // the group's camera columns
  size_t bytes = 0;
};

namespace {
constexpr size_t kOpenReaders = 64;  // data files kept open (images_by_row_group)
}  // namespace

std::shared_ptr<const io::parquet::FileReader> Dataset::reader(const std::string& path) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = readers_.begin(); it != readers_.end(); ++it) {
      if (it->first == path) {
        readers_.splice(readers_.begin(), readers_, it);
        return readers_.front().second;
      }
    }
  }
  std::shared_ptr<const io::parquet::FileReader> r = io::parquet::FileReader::open(options_.localize ? options_.localize(path) : path);
  std::lock_guard<std::mutex> lock(mu_);
  readers_.emplace_front(path, r);
  while (readers_.size() > kOpenReaders) readers_.pop_back();
  return r;
}

std::shared_ptr<const Dataset::ImageGroup> Dataset::image_group(const std::string& path, int64_t row) const {
  auto r = reader(path);
  int lo = 0, hi = r->num_row_groups();  // the group holding row: last start <= row
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (r->row_group_start(mid) <= row) lo = mid;
    else hi = mid;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = groups_.begin(); it != groups_.end(); ++it) {
      if ((*it)->group == lo && (*it)->path == path) {
        groups_.splice(groups_.begin(), groups_, it);
        return groups_.front();
      }
    }
  }
  auto g = std::make_shared<ImageGroup>();
  g->path = path;
  g->group = lo;
  g->first_row = r->row_group_start(lo);
  std::vector<std::string> cameras;
  for (const Feature* c : meta_.info.cameras()) cameras.push_back(c->key);
  g->table = r->read_row_group(lo, cameras);
  for (const io::Column& c : g->table.columns) g->bytes += size_t(detail::encoded_bytes(c));
  std::lock_guard<std::mutex> lock(mu_);
  groups_.push_front(g);
  group_bytes_ += g->bytes;
  while (groups_.size() > 1 && group_bytes_ > options_.image_cache_bytes) {
    group_bytes_ -= groups_.back()->bytes;
    groups_.pop_back();
  }
  return g;
}

std::string Dataset::image_cell(const Episode& e, const std::string& key, int64_t q) const {
  const std::string path = meta_.data_file(e);
  const int64_t first = meta_.info.is_v3() ? e.from_index - file_start_.at({e.data_chunk, e.data_file}) : 0;
  const int64_t row = first + (q - e.from_index);
  auto g = image_group(path, row);
  const std::string what = path + ": column '" + key + "'";
  const io::Column* col = g->table.find(key);
  if (!col) fail_corrupt(what + " (a feature in info.json) is missing");
  const io::Column* bytes = col->type == io::TypeId::kStruct ? col->find_child("bytes") : nullptr;
  if (!bytes || bytes->type != io::TypeId::kBinary)
    fail_corrupt(what + ": an image feature must be struct<bytes: binary, path: string>, got " + io::type_string(*col));
  const int64_t at = row - g->first_row;
  if (at < 0 || at >= g->table.num_rows() || !bytes->is_valid(at))
    fail_corrupt(what + ": no image bytes in row " + std::to_string(row));
  return std::string(bytes->str(at));
}

Dataset::Dataset(const std::string& root, DatasetOptions options) : Dataset(load_metadata(root), std::move(options)) {}

Dataset::Dataset(Metadata meta, DatasetOptions options) : meta_(std::move(meta)), options_(std::move(options)) {
  const std::string what = meta_.root + ": delta_timestamps";
  for (const auto& [key, deltas] : options_.delta_timestamps) {
    if (!meta_.info.find(key)) fail(ErrorKind::kInvalidArgument, what + ": no feature '" + key + "' in the dataset");
    std::vector<int64_t> frames;
    for (double d : deltas) {
      double f = d * meta_.info.fps;
      double r = std::round(f);
      if (std::abs(f - r) > options_.tolerance_s * meta_.info.fps)
        fail(ErrorKind::kInvalidArgument, what + "['" + key + "']: offset " + std::to_string(d) +
                                              " s is not a multiple of 1/fps (fps " + std::to_string(meta_.info.fps) + ")");
      frames.push_back(int64_t(r));
    }
    delta_frames_[key] = std::move(frames);
  }
  bool has_video = false;
  for (const Feature* cam : meta_.info.cameras()) has_video |= cam->is_video();
  if (has_video && options_.decode_images) {
    if (!io::video_support_available())
      fail_unsupported(meta_.root + ": the dataset's cameras are videos, and ember was built without video support "
                       "(FFmpeg not found at build time); image-feature datasets work without it");
    io::VideoCache::Options vo;
    vo.capacity = options_.video_decoders;
    // decoded at the stored size; video_frames resizes them as every other frame is resized
    if ((options_.image_width > 0) != (options_.image_height > 0))
      fail(ErrorKind::kInvalidArgument, meta_.root + ": resizing video frames needs both width and height > 0 (or both 0), got " +
                                            std::to_string(options_.image_width) + " x " + std::to_string(options_.image_height));
    videos_ = std::make_unique<io::VideoCache>(vo);
  }
  if (options_.decode_images && meta_.info.cameras().size() > 1) pool_ = std::make_unique<ThreadPool>(options_.threads);
  for (const Episode& e : meta_.episodes) {
    auto key = std::make_pair(e.data_chunk, e.data_file);
    auto it = file_start_.find(key);
    if (it == file_start_.end() || e.from_index < it->second) file_start_[key] = e.from_index;
  }
}

std::shared_ptr<const Dataset::EpisodeRows> Dataset::rows(const Episode& e) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->first == e.index) {
        cache_.splice(cache_.begin(), cache_, it);
        return cache_.front().second;
      }
    }
  }
  // decode outside the lock: other threads keep reading cached episodes meanwhile
  std::string path = meta_.data_file(e);
  std::shared_ptr<const io::parquet::FileReader> reader;
  std::vector<std::string> columns;  // all, or (images_by_row_group) all but the cameras
  if (options_.images_by_row_group) {
    reader = this->reader(path);
    for (const std::string& c : reader->column_names()) {
      const Feature* f = meta_.info.find(c);
      if (!f || !f->is_camera()) columns.push_back(c);
    }
  } else {
    reader = io::parquet::FileReader::open(options_.localize ? options_.localize(path) : path);
  }
  auto r = std::make_shared<EpisodeRows>();
  r->episode = e.index;
  int64_t first = meta_.info.is_v3() ? e.from_index - file_start_.at({e.data_chunk, e.data_file}) : 0;
  if (first + e.length > reader->num_rows())
    fail_corrupt(path + ": holds " + std::to_string(reader->num_rows()) + " rows, episode " + std::to_string(e.index) +
                 " needs rows " + std::to_string(first) + ".." + std::to_string(first + e.length - 1));
  r->table = reader->read_rows(first, first + e.length, columns);
  if (const io::Column* idx = r->table.find("index"); idx && idx->type == io::TypeId::kInt64 && e.length > 0) {
    if (idx->value<int64_t>(0) != e.from_index)
      fail_corrupt(path + ": episode " + std::to_string(e.index) + " should start at index " + std::to_string(e.from_index) +
                   ", its first row has index " + std::to_string(idx->value<int64_t>(0)));
  }
  std::lock_guard<std::mutex> lock(mu_);
  cache_.emplace_front(e.index, r);
  while (cache_.size() > std::max<size_t>(1, options_.episode_cache)) cache_.pop_back();
  return r;
}

namespace {

// Appends row `row` of column c (a number, or a list of numbers) to out.
void append_numbers(const io::Column& c, int64_t row, std::vector<double>& out, const std::string& what) {
  auto number = [&](const io::Column& col, int64_t i) -> double {
    if (!col.is_valid(i)) fail_corrupt(what + ": null value in row " + std::to_string(i));
    switch (col.type) {
      case io::TypeId::kBool: return col.value<uint8_t>(i);
      case io::TypeId::kInt32: return col.value<int32_t>(i);
      case io::TypeId::kInt64: return double(col.value<int64_t>(i));
      case io::TypeId::kFloat: return col.value<float>(i);
      case io::TypeId::kDouble: return col.value<double>(i);
      default: fail_corrupt(what + ": column of type " + io::type_string(col) + " is not numeric");
    }
  };
  if (c.type == io::TypeId::kList) {
    if (!c.is_valid(row)) fail_corrupt(what + ": null list in row " + std::to_string(row));
    for (int64_t k = c.offsets[size_t(row)]; k < c.offsets[size_t(row) + 1]; ++k) {
      if (c.child().type == io::TypeId::kList) append_numbers(c.child(), k, out, what);
      else out.push_back(number(c.child(), k));
    }
  } else {
    out.push_back(number(c, row));
  }
}

}  // namespace

std::string Dataset::task_of(const Episode& ep, const io::Table& t, int64_t row, const std::string& data_path) const {
  if (const io::Column* ti = t.find("task_index")) {
    std::vector<double> v;
    append_numbers(*ti, row, v, data_path + ": column 'task_index'");
    return meta_.task(v.empty() ? -1 : int64_t(v[0]), data_path + ": row " + std::to_string(row));
  }
  // no task_index column (some v2.1 datasets): the episode's task, as episodes.jsonl names it
  if (ep.tasks.size() != 1)
    fail_corrupt(data_path + ": no column 'task_index', and episode " + std::to_string(ep.index) + " names " +
                 std::to_string(ep.tasks.size()) + " tasks in its episode table (one is needed to stand in)");
  std::call_once(task_note_, [&] {
    std::fprintf(stderr, "ember: note: %s: no column 'task_index'; each frame takes its episode's task from the episode table\n",
                 data_path.c_str());
  });
  return ep.tasks[0];
}

double Dataset::start_correction(const std::string& path, double from_timestamp) const {
  if (from_timestamp <= 0) return 0;  // the file's own start: nothing to correct
  std::vector<double> times;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = frame_times_.find(path);
    if (it != frame_times_.end()) times = it->second;
  }
  if (times.empty()) {
    auto lease = videos_->get(path);
    times = lease->frame_timestamps();
    std::lock_guard<std::mutex> lock(mu_);
    frame_times_[path] = times;
  }
  return episode_start_correction(times, from_timestamp, meta_.info.fps);
}

std::vector<io::Image> Dataset::video_frames(const Episode& e, const std::string& camera, const std::vector<double>& ts) const {
  const VideoSpan& span = e.videos.at(camera);
  std::string path = meta_.video_file(e, camera);
  double shift = span.from_timestamp + start_correction(path, span.from_timestamp);
  std::vector<double> targets;
  for (double t : ts) targets.push_back(shift + t);
  std::vector<io::Frame> frames;
  try {
    auto lease = videos_->get(path);
    frames = lease->decode_many(targets, options_.tolerance_s);
  } catch (const Error& err) {
    // the decoder names the file and the time; say which camera and frame asked
    std::string at;
    for (double t : ts) at += (at.empty() ? "" : ", ") + std::to_string(int64_t(std::llround(t * meta_.info.fps)));
    throw Error(err.kind(), std::string(err.what()) + " (camera " + camera + ", episode " + std::to_string(e.index) +
                                " frame " + at + ")");
  }
  std::vector<io::Image> out;
  for (io::Frame& f : frames) {
    io::Image im{f.width, f.height, std::move(f.rgb)};
    if (options_.image_width > 0 && options_.image_height > 0) im = io::resize_bilinear(im, options_.image_width, options_.image_height);
    out.push_back(std::move(im));
  }
  return out;
}

Item Dataset::get(int64_t index) const {
  const Episode& ep = meta_.episode_of(index);
  auto here = rows(ep);
  Item item;
  item.index = index;
  item.episode_index = ep.index;
  item.frame_index = index - ep.from_index;
  const io::Table& t = here->table;
  const std::string data_path = meta_.data_file(ep);
  if (const io::Column* ts = t.find("timestamp")) {
    std::vector<double> v;
    append_numbers(*ts, item.frame_index, v, data_path + ": column 'timestamp'");
    item.timestamp = v.empty() ? 0 : v[0];
  } else {
    item.timestamp = double(item.frame_index) / meta_.info.fps;
  }
  if (item.frame_index < 0 || item.frame_index >= t.num_rows())
    fail_corrupt(data_path + ": episode " + std::to_string(ep.index) + " has " + std::to_string(t.num_rows()) +
                 " rows, frame " + std::to_string(item.frame_index) + " asked for");
  item.task = task_of(ep, t, item.frame_index, data_path);

  std::vector<std::pair<std::string, std::future<std::vector<io::Image>>>> pending;  // video cameras
  std::vector<std::pair<std::string, std::vector<std::string>>> gpu_cells;  // JPEG cells for nvJPEG
  for (const Feature& f : meta_.info.features) {
    if (f.dtype == "string") continue;
    // the frames this key reads: the item's own, or one per delta offset (clamped, padded)
    std::vector<int64_t> frames{index};
    std::vector<uint8_t> pad;
    auto d = delta_frames_.find(f.key);
    if (d != delta_frames_.end()) {
      frames.clear();
      for (int64_t off : d->second) {
        int64_t q = index + off;
        pad.push_back(q < ep.from_index || q >= ep.to_index);
        frames.push_back(std::clamp(q, ep.from_index, ep.to_index - 1));
      }
      item.is_pad[f.key] = pad;
    }
    if (f.is_video()) {
      if (!options_.decode_images) continue;
      // the timestamps of the frames asked for, as LeRobot takes them from the table
      const io::Column* ts = t.find("timestamp");
      std::vector<double> times;
      for (int64_t q : frames) {
        if (ts) append_numbers(*ts, q - ep.from_index, times, data_path + ": column 'timestamp'");
        else times.push_back(double(q - ep.from_index) / meta_.info.fps);
      }
      auto job = [this, &ep, key = f.key, times] { return video_frames(ep, key, times); };
      if (pool_) pending.emplace_back(f.key, pool_->submit(job));
      else item.images[f.key] = job();
      continue;
    }
    const std::string what = data_path + ": column '" + f.key + "'";
    if (f.is_image() && options_.images_by_row_group) {
      if (!options_.decode_images) continue;
      std::vector<std::string> cells;
      for (int64_t q : frames) cells.push_back(image_cell(ep, f.key, q));
      bool all_jpeg = options_.nvjpeg != nullptr;
      for (const std::string& c : cells) all_jpeg = all_jpeg && io::is_jpeg(reinterpret_cast<const uint8_t*>(c.data()), c.size());
      if (all_jpeg) {  // decoded below, with the other cameras' frames in one batch
        gpu_cells.emplace_back(f.key, std::move(cells));
        continue;
      }
      for (size_t k = 0; k < cells.size(); ++k)
        item.images[f.key].push_back(io::decode_image(reinterpret_cast<const uint8_t*>(cells[k].data()), cells[k].size(),
                                                      what + " frame " + std::to_string(frames[k])));
      continue;
    }
    const io::Column* col = t.find(f.key);
    if (!col) fail_corrupt(data_path + ": column '" + f.key + "' (a feature in info.json) is missing");
    if (f.is_image()) {
      if (!options_.decode_images) continue;
      const io::Column* bytes = col->type == io::TypeId::kStruct ? col->find_child("bytes") : nullptr;
      if (!bytes || bytes->type != io::TypeId::kBinary)
        fail_corrupt(what + ": an image feature must be struct<bytes: binary, path: string>, got " + io::type_string(*col));
      for (int64_t q : frames) {
        int64_t row = q - ep.from_index;
        if (!bytes->is_valid(row)) fail_corrupt(what + ": no image bytes in row " + std::to_string(row));
        std::string_view png = bytes->str(row);
        item.images[f.key].push_back(io::decode_image(reinterpret_cast<const uint8_t*>(png.data()), png.size(),
                                                      what + " row " + std::to_string(row)));
      }
      continue;
    }
    Value v;
    v.dtype = f.dtype;
    if (d != delta_frames_.end()) v.shape.push_back(int64_t(frames.size()));
    v.shape.insert(v.shape.end(), f.shape.begin(), f.shape.end());
    for (int64_t q : frames) append_numbers(*col, q - ep.from_index, v.data, what);
    int64_t per_frame = std::max<int64_t>(1, f.numel());
    if (int64_t(v.data.size()) != per_frame * int64_t(frames.size()))
      fail_corrupt(what + ": row holds " + std::to_string(v.data.size() / frames.size()) + " values, info.json shape says " +
                   std::to_string(per_frame));
    item.values[f.key] = std::move(v);
  }
  if (!gpu_cells.empty()) {
    std::vector<std::span<const uint8_t>> jpegs;
    for (const auto& [key, cells] : gpu_cells)
      for (const std::string& c : cells) jpegs.emplace_back(reinterpret_cast<const uint8_t*>(c.data()), c.size());
    std::vector<io::Image> images = options_.nvjpeg->decode(jpegs, data_path + ": frame " + std::to_string(index) + "'s cameras");
    size_t next = 0;
    for (const auto& [key, cells] : gpu_cells)
      for (size_t k = 0; k < cells.size(); ++k) item.images[key].push_back(std::move(images[next++]));
  }
  for (auto& [key, images] : pending) item.images[key] = images.get();  // rethrows a camera's error
  return item;
}

}  // namespace ember::data
