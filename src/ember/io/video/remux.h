// Joining MP4 videos one after another without re-encoding (stream copy), as LeRobot's
// v2.1 -> v3.0 converter joins per-episode videos into one file per chunk.
//
// Unlike FFmpeg's concat demuxer, which places each part at its container duration rounded
// to milliseconds (so LeRobot's from_timestamp can miss a part's first frame by up to ~0.6 ms),
// part i starts exactly at the sum of the earlier parts' durations in the stream time base:
// frame k of part i is at exactly from_timestamp_i + k/fps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::io {

// Where one input lies in the joined video; seconds from the joined stream's start.
struct ConcatPart {
  double from_timestamp = 0;  // its first frame
  double to_timestamp = 0;    // its end: from_timestamp + num_frames / fps, the next start
  int64_t num_frames = 0;
};

// Writes the video streams of inputs, in order, into one MP4 file at output (written to
// "<output>.tmp-<pid>" and renamed when complete; only the video stream is kept). Returns one
// ConcatPart per input. The inputs must share codec, picture size, pixel format, time base,
// frame rate and codec configuration (extradata), as files from one encoder setting do.
// Throws Error: kInvalidArgument when inputs is empty or an input differs from the first
// (naming both files and the field), or when its decode times would run backwards across the
// join; kNotFound / kCorruption naming an input that is missing or not a video; kUnsupported
// for an input whose edit list drops frames, or when ember was built without FFmpeg; kIO
// when output cannot be written. On error nothing is left at output (an earlier file there is
// untouched). Thread-safe for distinct outputs.
std::vector<ConcatPart> concat_videos(const std::vector<std::string>& inputs,
                                      const std::string& output);

}  // namespace ember::io
