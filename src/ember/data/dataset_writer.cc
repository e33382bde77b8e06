#include "ember/data/dataset_writer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>

#include "ember/core/error.h"
#include "ember/data/episode_buffer.h"
#include "ember/data/meta_writer.h"
#include "ember/data/path_template.h"
#include "ember/data/video_recorder.h"
#include "ember/io/video/video_decoder.h"
#include "ember/io/parquet/writer.h"

namespace ember::data {

namespace fs = std::filesystem;

namespace {

const char* const kDataPathV3 = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";
const char* const kDataPathV2 = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet";
const char* const kVideoPathV3 = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4";
const char* const kVideoPathV2 = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4";

std::atomic<int> g_writer_serial{0};

void make_dirs(const std::string& file) {
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  if (ec) fail(ErrorKind::kIO, file + ": cannot create its directory: " + ec.message());
}

}  // namespace

using detail::EpisodeBuffer;
using detail::Slot;

struct DatasetWriter::Impl {
  std::string root, tmp;
  WriterOptions opt;
  DatasetInfo info;
  std::unique_ptr<EpisodeBuffer> buffer;  // the current episode
  std::unique_ptr<detail::VideoRecorder> videos;  // its video cameras' encoders, and v3.0 files

  // what is saved
  std::vector<detail::EpisodeRecord> episodes;
  std::vector<std::map<std::string, FeatureStats>> stats;
  std::vector<std::string> tasks;
  std::map<std::string, int64_t> task_index;

  // v3.0: the data file being appended to
  std::unique_ptr<io::parquet::FileWriter> data;
  int64_t chunk = 0, file = 0, file_frames = 0;
  double file_bytes = 0;

  std::string failure;  // a write failed: the dataset is incomplete, the writer unusable
  bool finalized = false;

  bool v3() const { return opt.version == DatasetVersion::kV3_0; }

  void check_usable() const {
    if (finalized) fail(ErrorKind::kInvalidArgument, root + ": dataset writer used after finalize()");
    if (!failure.empty()) fail(ErrorKind::kIO, root + ": an earlier write failed (" + failure + ")");
  }

  std::string data_path(int64_t episode) const {
    TemplateArgs a;
    if (v3()) a.ints = {{"chunk_index", chunk}, {"file_index", file}};
    else a.ints = {{"episode_chunk", episode / opt.chunks_size}, {"episode_index", episode}};
    return tmp + "/" + format_path(info.data_path, a, "data_path");
  }

  void write_data(const io::Table& t, int64_t episode);
  void write_metadata();
  void publish();
};

void DatasetWriter::Impl::write_data(const io::Table& t, int64_t episode) {
  io::parquet::WriteOptions wo;
  wo.codec = opt.codec;
  if (!v3()) {
    std::string path = data_path(episode);
    make_dirs(path);
    io::parquet::write_table(path, t, wo);
    return;
  }
  double bytes = 0;
  for (const io::Column& c : t.columns) bytes += double(detail::encoded_bytes(c));
  // LeRobot's rule: roll over when the file plus this episode (at the file's average bytes per
  // frame) would reach the limit; the first episode of a file always goes in
  if (data && file_frames > 0) {
    const double mib = 1024.0 * 1024.0;
    double per_frame = file_bytes / double(file_frames);
    if ((file_bytes + per_frame * double(t.num_rows())) / mib >= opt.data_file_size_mb) {
      data->close();
      data.reset();
      if (file == opt.chunks_size - 1) file = 0, ++chunk;
      else ++file;
      file_bytes = 0;
      file_frames = 0;
    }
  }
  if (!data) {
    std::string path = data_path(episode);
    make_dirs(path);
    data = std::make_unique<io::parquet::FileWriter>(path, wo);
  }
  const int64_t step = opt.rows_per_group > 0 ? opt.rows_per_group : std::max<int64_t>(1, t.num_rows());
  for (int64_t at = 0; at < t.num_rows(); at += step) {
    if (at == 0 && step >= t.num_rows()) {
      data->write_row_group(t);
      continue;
    }
    io::Table part;
    for (const io::Column& c : t.columns) part.columns.push_back(io::slice(c, at, std::min(t.num_rows(), at + step)));
    data->write_row_group(part);
  }
  file_bytes += bytes;
  file_frames += t.num_rows();
}

void DatasetWriter::Impl::write_metadata() {
  if (data) {
    data->close();
    data.reset();
  }
  videos->finish(episodes);
  for (Feature& f : info.features)
    if (f.is_video()) f.video = videos->info(f.key);
  std::vector<Feature> features = info.features;
  if (v3()) {
    detail::write_tasks_parquet(tmp, tasks, opt.codec);
    detail::write_episodes_parquet(tmp, episodes, features, opt.codec);
  } else {
    detail::write_tasks_jsonl(tmp, tasks);
    detail::write_episodes_jsonl(tmp, episodes, features);
  }
  write_stats_json(tmp + "/meta/stats.json", aggregate_stats(stats), features);
  int64_t chunks = episodes.empty() ? 0 : (int64_t(episodes.size()) - 1) / opt.chunks_size + 1;
  detail::write_json_file(tmp + "/meta/info.json",
                          detail::info_json(info, opt.data_file_size_mb, opt.video_file_size_mb, chunks));
}

// Renames the finished directory into place; an existing root (overwrite) is moved aside first
// and removed only once the new one is in place.
void DatasetWriter::Impl::publish() {
  std::error_code ec;
  std::string old;
  if (fs::exists(root, ec)) {
    if (!opt.overwrite)
      fail(ErrorKind::kInvalidArgument, root + ": already exists (set overwrite to replace it)");
    old = root + ".old-" + std::to_string(::getpid()) + "-" + std::to_string(g_writer_serial++);
    fs::rename(root, old, ec);
    if (ec) fail(ErrorKind::kIO, root + ": cannot move the existing dataset aside: " + ec.message());
  }
  fs::rename(tmp, root, ec);
  if (ec) {
    std::error_code ignored;
    if (!old.empty()) fs::rename(old, root, ignored);
    fail(ErrorKind::kIO, root + ": cannot rename " + tmp + " into place: " + ec.message());
  }
  if (!old.empty()) fs::remove_all(old, ec);
}

DatasetWriter DatasetWriter::create(const std::string& root_in, double fps, std::vector<Feature> features,
                                    const std::string& robot_type, WriterOptions options) {
  std::string root = root_in;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty()) fail(ErrorKind::kInvalidArgument, "dataset writer: root path is empty");
  const std::string what = root;
  if (!(fps > 0) || !std::isfinite(fps)) fail(ErrorKind::kInvalidArgument, what + ": fps must be positive, got " + std::to_string(fps));
  if (options.chunks_size < 1) fail(ErrorKind::kInvalidArgument, what + ": chunks_size must be positive");
  if (!(options.data_file_size_mb > 0)) fail(ErrorKind::kInvalidArgument, what + ": data_file_size_mb must be positive");
  if (options.jpeg_quality < 0 || options.jpeg_quality > 100)
    fail(ErrorKind::kInvalidArgument, what + ": jpeg_quality must be 0 (PNG) or 1..100, got " + std::to_string(options.jpeg_quality));
  if (options.rows_per_group < 0) fail(ErrorKind::kInvalidArgument, what + ": rows_per_group must be >= 0");

  auto impl = std::make_unique<Impl>();
  impl->root = root;
  impl->opt = options;
  const std::vector<Feature> standard = detail::standard_features();
  std::vector<Slot> slots;
  for (const Feature& f : features) {
    if (f.key.empty()) fail(ErrorKind::kInvalidArgument, what + ": a feature has an empty key");
    if (f.key.find('/') != std::string::npos)
      fail(ErrorKind::kInvalidArgument, what + ": feature '" + f.key + "': keys must not contain '/'");
    bool std_key = false;
    for (const Feature& s : standard) {
      if (s.key != f.key) continue;
      std_key = true;
      if (f.dtype != s.dtype || f.shape != s.shape)
        fail(ErrorKind::kInvalidArgument, what + ": feature '" + f.key + "' is a standard feature and must be " + s.dtype +
                                              " of shape [1]");
    }
    if (std_key) continue;
    for (const Slot& s : slots)
      if (s.feature.key == f.key) fail(ErrorKind::kInvalidArgument, what + ": feature '" + f.key + "' is given twice");
    slots.push_back(detail::make_slot(f, what));
  }
  std::vector<Slot> video_slots;
  for (const Slot& s : slots) {
    if (s.kind != detail::Kind::kVideo) continue;
    const std::string where = what + ": feature '" + s.feature.key + "'";
    if (!io::video_support_available())
      fail_unsupported(where + ": video features need ember built with FFmpeg (this build has no video support); "
                       "use dtype \"image\" instead");
    if (options.video.pix_fmt == "yuv420p" && (s.width % 2 || s.height % 2))
      fail(ErrorKind::kInvalidArgument, where + ": yuv420p video needs an even width and height, got " +
                                            std::to_string(s.height) + "x" + std::to_string(s.width));
    video_slots.push_back(s);
  }
  if (!(options.video_file_size_mb > 0))
    fail(ErrorKind::kInvalidArgument, what + ": video_file_size_mb must be positive");

  DatasetInfo& info = impl->info;
  info.codebase_version = impl->v3() ? "v3.0" : "v2.1";
  info.version_major = impl->v3() ? 3 : 2;
  info.version_minor = impl->v3() ? 0 : 1;
  info.robot_type = robot_type;
  info.fps = fps;
  info.chunks_size = options.chunks_size;
  info.data_path = impl->v3() ? kDataPathV3 : kDataPathV2;
  if (!video_slots.empty()) info.video_path = impl->v3() ? kVideoPathV3 : kVideoPathV2;
  for (const Slot& s : slots) info.features.push_back(s.feature);
  for (const Feature& f : standard) info.features.push_back(f);

  std::error_code ec;
  if (fs::exists(root, ec) && !options.overwrite)
    fail(ErrorKind::kInvalidArgument, root + ": already exists (set overwrite to replace it)");
  impl->tmp = root + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(g_writer_serial++);
  fs::remove_all(impl->tmp, ec);  // a leftover of this process id from an earlier crash
  fs::create_directories(impl->tmp + "/meta", ec);
  if (ec) fail(ErrorKind::kIO, impl->tmp + ": cannot create the temporary directory: " + ec.message());
  impl->buffer = std::make_unique<EpisodeBuffer>(std::move(slots), fps, options.jpeg_quality);
  detail::VideoSettings vs;
  vs.tmp_root = impl->tmp;
  vs.v3 = impl->v3();
  vs.video_path = info.video_path;
  vs.chunks_size = options.chunks_size;
  vs.file_size_mb = options.video_file_size_mb;
  vs.fps = fps;
  vs.encoder = options.video;
  impl->videos = std::make_unique<detail::VideoRecorder>(std::move(video_slots), std::move(vs));
  return DatasetWriter(std::move(impl));
}

DatasetWriter::DatasetWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DatasetWriter::DatasetWriter(DatasetWriter&&) noexcept = default;
DatasetWriter& DatasetWriter::operator=(DatasetWriter&&) noexcept = default;

DatasetWriter::~DatasetWriter() {
  if (!impl_ || impl_->finalized) return;
  impl_->data.reset();  // drops its temporary file
  impl_->videos.reset();
  std::error_code ec;
  fs::remove_all(impl_->tmp, ec);
}

void DatasetWriter::add_frame(const Frame& frame) {
  impl_->check_usable();
  Impl& m = *impl_;
  m.buffer->validate(frame, m.root + ": frame " + std::to_string(m.buffer->size()));
  if (m.videos->empty()) {
    m.buffer->add(frame);
    return;
  }
  // a frame half added to the videos cannot be taken back: any failure is sticky
  try {
    m.videos->add(frame, int64_t(m.episodes.size()));
    m.buffer->add(frame);
  } catch (const std::exception& e) {
    m.failure = e.what();
    throw;
  }
}

int64_t DatasetWriter::save_episode(const std::string& task) {
  Impl& m = *impl_;
  m.check_usable();
  const int64_t episode = int64_t(m.episodes.size());
  const std::string what = m.root + ": episode " + std::to_string(episode);
  EpisodeBuffer& buf = *m.buffer;
  if (buf.size() == 0) fail(ErrorKind::kInvalidArgument, what + ": save_episode() without frames (add_frame first)");
  std::vector<std::string> frame_tasks = buf.frame_tasks();
  for (size_t k = 0; k < frame_tasks.size(); ++k) {
    if (frame_tasks[k].empty()) frame_tasks[k] = task;
    if (frame_tasks[k].empty())
      fail(ErrorKind::kInvalidArgument, what + ": frame " + std::to_string(k) + " has no task (pass one to save_episode)");
  }
  // tasks: the episode's distinct tasks in order of appearance; new ones get the next indices
  detail::EpisodeRecord rec;
  std::map<std::string, int64_t> ids = m.task_index;
  std::vector<std::string> all = m.tasks;
  std::vector<int64_t> task_ids;
  for (const std::string& t : frame_tasks) {
    if (!ids.count(t)) {
      ids[t] = int64_t(all.size());
      all.push_back(t);
    }
    if (std::find(rec.tasks.begin(), rec.tasks.end(), t) == rec.tasks.end()) rec.tasks.push_back(t);
    task_ids.push_back(ids[t]);
  }
  const int64_t first = m.info.total_frames;
  io::Table table = buf.table(episode, first, task_ids);
  std::map<std::string, FeatureStats> stats = buf.stats(episode, first, task_ids, m.opt.stats);
  try {
    m.write_data(table, episode);
    m.videos->save_episode(episode, m.episodes);
  } catch (const std::exception& e) {
    m.failure = e.what();
    throw;
  }
  rec.index = episode;
  rec.length = buf.size();
  rec.data_chunk = m.v3() ? m.chunk : episode / m.opt.chunks_size;
  rec.data_file = m.v3() ? m.file : 0;
  rec.from_index = first;
  rec.to_index = first + buf.size();
  rec.stats = stats;
  m.episodes.push_back(std::move(rec));
  m.stats.push_back(std::move(stats));
  m.tasks = std::move(all);
  m.task_index = std::move(ids);
  m.info.total_episodes += 1;
  m.info.total_frames += buf.size();
  m.info.total_tasks = int64_t(m.tasks.size());
  buf.clear();
  return episode;
}

void DatasetWriter::clear_episode() {
  impl_->buffer->clear();
  impl_->videos->clear();
}

void DatasetWriter::finalize() {
  Impl& m = *impl_;
  m.check_usable();
  if (m.buffer->size() > 0)
    fail(ErrorKind::kInvalidArgument, m.root + ": finalize() with " + std::to_string(m.buffer->size()) +
                                          " frames not saved (call save_episode() or clear_episode() first)");
  if (m.episodes.empty()) fail(ErrorKind::kInvalidArgument, m.root + ": finalize() before any save_episode()");
  std::error_code ec;
  if (!m.opt.overwrite && fs::exists(m.root, ec))
    fail(ErrorKind::kInvalidArgument, m.root + ": already exists (set overwrite to replace it)");
  try {
    m.write_metadata();
    m.publish();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidArgument) m.failure = e.what();
    throw;
  } catch (const std::exception& e) {
    m.failure = e.what();
    throw;
  }
  m.finalized = true;
}

int64_t DatasetWriter::num_episodes() const { return int64_t(impl_->episodes.size()); }
int64_t DatasetWriter::num_frames() const { return impl_->info.total_frames; }
int64_t DatasetWriter::buffered_frames() const { return impl_->buffer->size(); }
const std::string& DatasetWriter::root() const { return impl_->root; }
const std::string& DatasetWriter::temp_root() const { return impl_->tmp; }
const DatasetInfo& DatasetWriter::info() const { return impl_->info; }
const std::vector<std::map<std::string, FeatureStats>>& DatasetWriter::episode_stats() const { return impl_->stats; }

}  // namespace ember::data
