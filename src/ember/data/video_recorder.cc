#include "ember/data/video_recorder.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "ember/core/error.h"
#include "ember/data/path_template.h"
#include "ember/io/video/remux.h"
#include "ember/io/video/video_decoder.h"

namespace ember::data::detail {

namespace fs = std::filesystem;

namespace {

void make_parent(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) fail(ErrorKind::kIO, path + ": cannot create its directory: " + ec.message());
}

// fps as a fraction for the encoder: whole rates exactly, others to a millionth.
void set_rate(io::EncoderOptions& o, double fps) {
  if (fps == std::floor(fps) && fps < 1e6) {
    o.fps_num = int(fps), o.fps_den = 1;
  } else {
    o.fps_num = int(std::llround(fps * 1000)), o.fps_den = 1000;
  }
}

}  // namespace

struct VideoRecorder::Camera {
  Slot slot;
  std::unique_ptr<io::VideoEncoder> encoder;  // the current episode's, once it has a frame
  std::string encoding;                       // its path
  VideoInfo first;                            // of the first saved episode

  // v3.0: the file being filled
  int64_t chunk = 0, file = 0;
  std::vector<std::string> parts;   // per-episode MP4s, in order
  std::vector<int64_t> episodes;    // their episode indices
  double bytes = 0;                 // the parts' sizes
};

VideoRecorder::VideoRecorder(std::vector<Slot> cameras, VideoSettings settings) : s_(std::move(settings)) {
  for (Slot& slot : cameras) {
    auto c = std::make_unique<Camera>();
    c->slot = std::move(slot);
    cameras_.push_back(std::move(c));
  }
}

VideoRecorder::~VideoRecorder() = default;

std::string VideoRecorder::file_path(const Camera& c, int64_t episode) const {
  TemplateArgs a;
  a.strings = {{"video_key", c.slot.feature.key}};
  if (s_.v3) a.ints = {{"chunk_index", c.chunk}, {"file_index", c.file}};
  else a.ints = {{"episode_chunk", episode / s_.chunks_size}, {"episode_index", episode}};
  return s_.tmp_root + "/" + format_path(s_.video_path, a, "video_path");
}

void VideoRecorder::add(const Frame& f, int64_t episode) {
  for (auto& c : cameras_) {
    if (!c->encoder) {
      char name[32];
      std::snprintf(name, sizeof name, "episode_%06lld.mp4", static_cast<long long>(episode));
      c->encoding = s_.v3 ? s_.tmp_root + "/.video-parts/" + c->slot.feature.key + "/" + name : file_path(*c, episode);
      make_parent(c->encoding);
      io::EncoderOptions o = s_.encoder;
      o.width = c->slot.width;
      o.height = c->slot.height;
      set_rate(o, s_.fps);
      c->encoder = std::make_unique<io::VideoEncoder>(c->encoding, o);
    }
    c->encoder->add_frame(f.images.at(c->slot.feature.key).rgb);
  }
}

void VideoRecorder::clear() {
  for (auto& c : cameras_) c->encoder.reset();  // removes its temporary file
}

void VideoRecorder::save_episode(int64_t episode, std::vector<EpisodeRecord>& episodes) {
  const double mib = 1024.0 * 1024.0;
  for (auto& c : cameras_) {
    if (!c->encoder) fail(ErrorKind::kInvalidArgument, "video '" + c->slot.feature.key + "': episode without frames");
    c->encoder->finish();
    c->encoder.reset();
    if (c->first.codec.empty()) {
      io::VideoInfo v = io::probe_video(c->encoding);
      c->first = VideoInfo{v.codec, v.pix_fmt, s_.fps, v.width, v.height};
    }
    if (!s_.v3) continue;
    std::error_code ec;
    double size = double(fs::file_size(c->encoding, ec));
    if (ec) fail(ErrorKind::kIO, c->encoding + ": cannot read its size: " + ec.message());
    // LeRobot's rule: a new file once this episode would bring the current one to the limit
    if (!c->parts.empty() && (c->bytes + size) / mib >= s_.file_size_mb) {
      join(*c, episodes);
      if (c->file == s_.chunks_size - 1) c->file = 0, ++c->chunk;
      else ++c->file;
    }
    c->parts.push_back(c->encoding);
    c->episodes.push_back(episode);
    c->bytes += size;
  }
}

void VideoRecorder::join(Camera& c, std::vector<EpisodeRecord>& episodes) {
  const std::string out = file_path(c, 0);
  make_parent(out);
  std::vector<io::ConcatPart> spans = io::concat_videos(c.parts, out);
  for (size_t i = 0; i < spans.size(); ++i) {
    int64_t e = c.episodes[i];
    if (e < 0 || e >= int64_t(episodes.size()))
      fail(ErrorKind::kInvalidArgument, out + ": episode " + std::to_string(e) + " has no record");
    episodes[size_t(e)].videos[c.slot.feature.key] =
        VideoSpan{c.chunk, c.file, spans[i].from_timestamp, spans[i].to_timestamp};
  }
  for (const std::string& p : c.parts) {
    std::error_code ec;
    fs::remove(p, ec);
  }
  c.parts.clear();
  c.episodes.clear();
  c.bytes = 0;
}

void VideoRecorder::finish(std::vector<EpisodeRecord>& episodes) {
  for (auto& c : cameras_)
    if (!c->parts.empty()) join(*c, episodes);
  std::error_code ec;
  fs::remove_all(s_.tmp_root + "/.video-parts", ec);
}

VideoInfo VideoRecorder::info(const std::string& key) const {
  for (const auto& c : cameras_)
    if (c->slot.feature.key == key) return c->first;
  return {};
}

}  // namespace ember::data::detail
