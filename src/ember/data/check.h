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
  int64_t episodes = 0, data_files = 0, video_files = 0, frames = 0;
};

// Checks: metadata loads and agrees with itself; every data file exists, opens, and holds the
// rows of its episodes (row counts, contiguous index, episode_index, frame_index, timestamps
// at 1/fps within tolerance_s); every video file exists, opens, and has a frame within
// tolerance_s of every frame timestamp of its episodes. `progress` (may be empty) is called
// with (files done, files total).
CheckReport check_dataset(const std::string& root, double tolerance_s = 1e-4,
                          const std::function<void(int64_t, int64_t)>& progress = {});

// Of a video file's frame times, how much later than from_timestamp an episode's first frame
// lies (0 when within half a frame period of none): files joined by FFmpeg's concat demuxer
// place each part at its duration rounded to the millisecond.
double episode_start_correction(const std::vector<double>& frame_times, double from_timestamp, double fps);

}  // namespace ember::data
