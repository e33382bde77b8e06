// Decoding frames of one video file at given times, the way LeRobot's loader does: seek to the
// key frame at or before the time, decode forward, take the frame whose presentation time is
// nearest, and refuse it when that is further away than a tolerance (LeRobot's tolerance_s).
//
// Times are in seconds from the start of the video stream (its first presentation time), so
// a stream whose first pts is not 0 still starts at t=0. LeRobot v3.0 files hold several
// episodes one after another; the caller asks for from_timestamp + t and nothing else changes.
//
// Built without FFmpeg, every way of opening a video throws Error(kUnsupported) saying so;
// video_support_available() tells in advance.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/file.h"

namespace ember::io {

// True when ember was built with FFmpeg and can decode videos.
bool video_support_available();

// What a video file holds, read from its container header.
struct VideoInfo {
  int width = 0, height = 0;  // coded picture size in pixels
  double fps = 0;             // nominal frame rate (the container's base rate); 0 if unknown
  double avg_fps = 0;         // frames / duration; differs from fps in concatenated files
  std::string codec;          // FFmpeg's codec name: "av1", "h264", "hevc", "mpeg4", ...
  std::string pix_fmt;        // "yuv420p", ...; "unknown" when the header does not say
  int64_t num_frames = -1;    // from the header; -1 when the container does not say
  double duration = 0;        // seconds; 0 if unknown
  double start_time = 0;      // seconds: presentation time of the first frame, in stream time
};

// Reads a video file's header and its first packets (for what headers leave out, such as
// the pixel format). Thread-safe. Throws Error: kNotFound for a missing file, kCorruption
// naming the file when it is not a video FFmpeg can read, kUnsupported when built without
// FFmpeg.
VideoInfo probe_video(const std::string& path);

// One decoded picture.
struct Frame {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3] uint8, rows packed without padding
  double timestamp = 0;      // presentation time in seconds from the stream's start
};

struct DecoderOptions {
  // Decoder threads for one file; 0 lets FFmpeg choose. 1 by default because the loader
  // decodes many samples in parallel, one decoder each.
  int threads = 1;
  // Output size; both 0 keep the video's size, both > 0 resize (libswscale, bilinear).
  int width = 0, height = 0;
  // A request this many frames or fewer ahead of the last decoded frame keeps decoding
  // forward instead of seeking; so does any request whose key frame was already decoded.
  int max_forward_frames = 8;
  // FFmpeg decoder for AV1 streams. "" takes libaom-av1, the reference decoder, which refuses
  // damaged picture data that libdav1d turns into a wrong picture, and libdav1d where this
  // FFmpeg lacks libaom; "libdav1d" is about 2.3x faster (ember bench decode --av1_decoder).
  std::string av1_decoder;
};

// An open video file. Not thread-safe: one thread at a time (VideoCache hands decoders out
// that way). Moving a decoder to another thread between calls is fine.
class VideoDecoder {
 public:
  // Opens the best video stream of a file. Throws kNotFound (missing file), kCorruption
  // naming the file (not a video FFmpeg can read, no video stream), kUnsupported (codec
  // without a decoder in this FFmpeg, or ember built without FFmpeg), kInvalidArgument
  // (bad options).
  explicit VideoDecoder(const std::string& path, const DecoderOptions& options = {});
  // Same, on bytes from any Source (in memory for tests); source.name() appears in errors.
  explicit VideoDecoder(std::unique_ptr<Source> source, const DecoderOptions& options = {});
  ~VideoDecoder();
  VideoDecoder(const VideoDecoder&) = delete;
  VideoDecoder& operator=(const VideoDecoder&) = delete;

  const std::string& path() const;
  const VideoInfo& info() const;
  // Size of the frames this decoder returns (the resize target, or the video's size).
  int output_width() const;
  int output_height() const;

  // The frame whose presentation time is nearest t (seconds from the stream start).
  // Throws Error naming the file, t and the nearest frame's time: kInvalidArgument when t is
  // before the start or after the last frame by more than tolerance, kCorruption when the
  // nearest frame inside the video is further than tolerance (a gap), or when the stream
  // does not decode. After an error the decoder stays usable.
  Frame decode_at(double t, double tolerance = 1e-4);
  // Same, writing the picture into out (output_height() x output_width() x 3 bytes, owned by
  // the caller); returns the frame's timestamp.
  double decode_into(double t, uint8_t* out, double tolerance = 1e-4);
  // Frames at every time in ts, returned in the order of ts; decoded in ascending time order
  // so that neighbouring times share one pass of decoding.
  std::vector<Frame> decode_many(const std::vector<double>& ts, double tolerance = 1e-4);

  // Presentation times (seconds from the stream start, ascending) of every frame, read from
  // the container's packets without decoding. The next decode seeks.
  std::vector<double> frame_timestamps();

  // Counters for tests and benchmarks.
  struct Stats {
    int64_t seeks = 0;           // demuxer seeks
    int64_t frames_decoded = 0;  // pictures out of the decoder, returned or not
  };
  Stats stats() const;
  // The FFmpeg decoder in use ("libaom-av1", "h264", ...).
  std::string decoder_name() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::io
