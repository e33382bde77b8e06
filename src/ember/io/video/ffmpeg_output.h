// Internal to ember_video: an MP4 file being muxed by FFmpeg, written to "<path>.tmp-<pid>"
// and renamed over path only when finish() succeeds, so that readers never see half a video.
// Only compiled when FFmpeg is available.
#pragma once

#include <string>

extern "C" {
#include <libavformat/avformat.h>
}

namespace ember::io::ffmpeg {

class Output {
 public:
  // Creates the temporary file. Throws kIO naming path when it cannot be created.
  explicit Output(std::string path);
  // Without a successful finish(), closes and removes the temporary file; an earlier file at
  // path is left untouched.
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  const std::string& path() const { return path_; }
  AVFormatContext* format() const { return fmt_; }
  // A new stream for the caller to fill in before write_header(); owned by the muxer.
  AVStream* add_stream();
  // Throws kUnsupported when the MP4 muxer refuses the streams (a codec MP4 cannot hold).
  // The muxer may change the streams' time bases: packets are rescaled to them afterwards.
  void write_header();
  // Muxes one packet whose timestamps are in its stream's time base; takes its data (the
  // packet is left blank). Throws kIO naming path.
  void write(AVPacket* packet);
  // Writes the index, closes the file and renames it to path. Throws kIO naming path.
  void finish();

 private:
  [[noreturn]] void fail_write(const std::string& what, int code);
  void close();

  std::string path_, tmp_path_;
  AVFormatContext* fmt_ = nullptr;
  bool finished_ = false;
};

}  // namespace ember::io::ffmpeg
