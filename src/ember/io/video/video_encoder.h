// Encoding RGB frames into an MP4 video with the stream settings LeRobot's
// encode_video_frames writes: libsvtav1, yuv420p, a key frame every 2 frames (g=2), crf=30,
// frame k at exactly k/fps (pts = k in a 1/fps time base, which the MP4 muxer rescales
// exactly to its 1/(fps*2^n) track time scale, 1/15360 at 30 fps).
//
// The file appears at its path only when finish() succeeds; until then it is written to
// "<path>.tmp-<pid>", which an encoder destroyed without finish() removes.
//
// Built without FFmpeg, constructing an encoder throws Error(kUnsupported) saying so;
// video_support_available() (video_decoder.h) tells in advance.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ember::io {

struct EncoderOptions {
  std::string codec = "libsvtav1";         // FFmpeg encoder name; LeRobot's default
  std::string fallback_codec = "libx264";  // used when codec is not in this FFmpeg; "" for none
  std::string pix_fmt = "yuv420p";         // FFmpeg pixel format name the stream is coded in
  int gop = 2;                             // a key frame every gop frames (FFmpeg's -g), >= 1
  int crf = 30;                            // constant rate factor; < 0 leaves the encoder's own
  int fps_num = 30, fps_den = 1;           // frame rate fps_num / fps_den, both > 0
  int width = 0, height = 0;               // picture size in pixels, > 0; even for yuv420p
  // Encoder speed preset. "" picks a fast one: "12" for libsvtav1,
  // "veryfast" for libx264, the encoder's own default for others. "default" keeps the
  // encoder's own default (what LeRobot uses: preset 10 with SVT-AV1 1.4, "medium" for x264).
  std::string preset;
  int threads = 0;  // FFmpeg's thread_count for the encoder; 0 lets the encoder choose
};

// One video file being written. Not thread-safe: one thread at a time; encoders of different
// files run in parallel.
class VideoEncoder {
 public:
  // Checks the options, opens the encoder (options.codec, else options.fallback_codec) and
  // creates the temporary file. Throws Error: kInvalidArgument naming path for bad options
  // (sizes the pixel format cannot hold, such as odd sizes for yuv420p) or options the
  // encoder refuses; kUnsupported naming the codec when neither encoder exists in this
  // FFmpeg, or when ember was built without FFmpeg; kIO when the file cannot be created.
  VideoEncoder(const std::string& path, const EncoderOptions& options);
  // Without a successful finish(): removes the temporary file; an earlier file at path stays.
  ~VideoEncoder();
  VideoEncoder(const VideoEncoder&) = delete;
  VideoEncoder& operator=(const VideoEncoder&) = delete;

  // Encodes the next frame, rgb is [height, width, 3] uint8 with rows packed, read before the
  // call returns. The span form checks the size first (kInvalidArgument; the encoder stays
  // usable). Throws kIO when encoding or writing fails; after such a failure every later call
  // throws the same error.
  void add_frame(const uint8_t* rgb);
  void add_frame(std::span<const uint8_t> rgb);
  // Drains the encoder, writes the MP4 index and renames the file to path. Throws
  // kInvalidArgument when no frame was added, kIO when encoding or writing fails (sticky, as
  // above). Calls after a successful finish() throw kInvalidArgument.
  void finish();

  const std::string& path() const;
  // The FFmpeg encoder in use: options.codec, or the fallback.
  const std::string& codec() const;
  int64_t frames_added() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Encodes the frames, frames is [num_frames, height, width, 3] uint8, into path in one go
// (VideoEncoder, then finish()). Returns the encoder used. Throws as VideoEncoder does, and
// kInvalidArgument when frames.size() is not a multiple of height * width * 3.
std::string encode_video(const std::string& path, std::span<const uint8_t> frames,
                         const EncoderOptions& options);
// Same, one pointer per [height, width, 3] frame.
std::string encode_video(const std::string& path, const std::vector<const uint8_t*>& frames,
                         const EncoderOptions& options);

}  // namespace ember::io
