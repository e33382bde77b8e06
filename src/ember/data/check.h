// `ember data check`: validates every file of a LeRobot dataset and lists each problem, where
// opening the dataset would stop at the first.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ember::data {

struct Problem {
  std::string file;     // the file at fault (or the dataset root)
  std::string message;  // what is wrong, naming the field / episode / frame
};

struct CheckReport {
  std::vector<Problem> problems;
  // Not wrong, but not as declared: a stored column type or a video codec other than
  // info.json's, files no episode refers to. They do not fail the check.
  std::vector<Problem> warnings;
  int64_t episodes = 0, data_files = 0, video_files = 0, frames = 0;
  int64_t frames_decoded = 0;  // video frames decoded and compared with their times; shards: image cells decoded
};

struct CheckOptions {
  double tolerance_s = 1e-4;  // timestamps, as LeRobot's tolerance_s
  // Decode every frame of every video; otherwise each video's first frame and each
  // episode's first and last frame.
  bool decode_all = false;
  // Called with (files done, files total); may be empty.
  std::function<void(int64_t, int64_t)> progress;
  // With decode_all: called with (frames decoded, frames total) as decoding goes; may be empty.
  std::function<void(int64_t, int64_t)> decode_progress;
};

// Checks: metadata loads and agrees with itself; every data file exists, opens, and holds the
// rows of its episodes (row counts, contiguous index, episode_index, frame_index, timestamps
// at 1/fps within tolerance_s, task_index in the task table, no nulls, vector lengths as
// info.json's shapes); every video file exists, opens, has a frame within tolerance_s of
// every frame timestamp of its episodes, and decodes (see decode_all) to frames of its size
// at the times asked for.
CheckReport check_dataset(const std::string& root, const CheckOptions& options);
CheckReport check_dataset(const std::string& root, double tolerance_s = 1e-4,
                          const std::function<void(int64_t, int64_t)>& progress = {});

// `ember data check --fix`: rewrites meta/info.json's total_episodes, total_frames and
// total_tasks from the episode and task tables (atomically; every other field is kept as
// written). Returns one line per changed field ("total_frames: 300 -> 261"); empty when
// nothing needed changing. Throws Error when the metadata cannot be read at all.
std::vector<std::string> fix_totals(const std::string& root);

// Of a video file's frame times, how much later than from_timestamp an episode's first frame
// lies (0 when within half a frame period of none): files joined by FFmpeg's concat demuxer
// place each part at its duration rounded to the millisecond.
double episode_start_correction(const std::vector<double>& frame_times, double from_timestamp, double fps);

}  // namespace ember::data
