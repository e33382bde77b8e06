// Internal to DatasetWriter: the video cameras of a dataset being written. Frames are encoded
// as they arrive, one encoder per camera for the current episode, into a per-episode MP4:
//   v2.1  directly at the episode's video_path (one file per episode and camera);
//   v3.0  at "<tmp>/.video-parts/<key>/episode_NNNNNN.mp4"; the parts of a camera's current file
//         are joined with io::concat_videos (no re-encoding) when the file is finished: when the
//         next episode would bring it to video_file_size_mb (LeRobot's rule, on the parts'
//         sizes), or at finish(). The spans concat_videos returns are the episodes' VideoSpans.
// Not thread-safe. Throws what the video layer throws (kIO, kUnsupported, ...).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/data/episode_buffer.h"
#include "ember/data/meta_writer.h"
#include "ember/io/video/video_encoder.h"

namespace ember::data::detail {

struct VideoSettings {
  std::string tmp_root;       // the dataset's temporary directory
  bool v3 = true;
  std::string video_path;     // info.json's template
  int64_t chunks_size = 1000;
  double file_size_mb = 200;  // v3.0: a file takes episodes until the next would reach this
  double fps = 30;
  io::EncoderOptions encoder; // codec, crf, gop, ...; size and frame rate are set per camera
};

class VideoRecorder {
 public:
  // cameras: the video slots, in feature order.
  VideoRecorder(std::vector<Slot> cameras, VideoSettings settings);
  ~VideoRecorder();

  bool empty() const { return cameras_.empty(); }
  // Encodes every camera's image of a validated frame of episode `episode`.
  void add(const Frame& f, int64_t episode);
  // Drops the current episode's videos.
  void clear();
  // Finishes the current episode's videos (episode = episodes.size(): its record is not in
  // `episodes` yet). v3.0: a camera's file that the episode would fill is joined first and
  // the spans of its episodes set in `episodes`.
  void save_episode(int64_t episode, std::vector<EpisodeRecord>& episodes);
  // v3.0: joins every camera's open file and sets the spans of its episodes; removes the parts.
  void finish(std::vector<EpisodeRecord>& episodes);
  // What the first saved episode's video of `key` holds (codec, pix_fmt, size, fps), for the
  // info.json block; codec is empty before any episode was saved.
  VideoInfo info(const std::string& key) const;

 private:
  struct Camera;
  std::string file_path(const Camera& c, int64_t episode) const;
  void join(Camera& c, std::vector<EpisodeRecord>& episodes);

  std::vector<std::unique_ptr<Camera>> cameras_;
  VideoSettings s_;
};

}  // namespace ember::data::detail
