// Internal to ember_video: an FFmpeg demuxer reading through ember's Source seam, with its
// video stream chosen. Only compiled when FFmpeg is available.
#pragma once

#include <exception>
#include <memory>
#include <string>

#include "ember/core/file.h"
#include "ember/io/video/video_decoder.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

namespace ember::io::ffmpeg {

// FFmpeg's message for an AVERROR code.
std::string error_text(int code);

// Silences FFmpeg's own log lines (once per process): its failures reach the user as
// ember::Error messages instead. EMBER_FFMPEG_LOG=1 in the environment, or a log level set
// by the program before, keeps FFmpeg's messages.
void init_logging();

class Input {
 public:
  // Opens the container and picks its best video stream. Throws kCorruption naming the
  // source when the bytes are not a container FFmpeg reads or hold no video stream.
  explicit Input(std::unique_ptr<Source> source);
  ~Input();
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;

  // Reads stream parameters from the first packets (avformat_find_stream_info): the
  // constructor does when the header lacks what decoding needs; probing always does.
  void find_stream_info();

  AVFormatContext* format() const { return fmt_.get(); }
  AVStream* stream() const { return fmt_->streams[stream_index_]; }
  int stream_index() const { return stream_index_; }
  const std::string& name() const { return source_->name(); }
  // Stream start in stream time base (0 when the container does not say).
  int64_t start_pts() const;
  VideoInfo info() const;

  // A read failure inside an FFmpeg callback cannot throw through C code: it is kept here
  // and rethrown by the caller once FFmpeg returns. No-op when nothing failed.
  void rethrow_read_error();
  // Throws the kept read error if any, else kCorruption: "<name>: <what>: <FFmpeg's text>".
  [[noreturn]] void fail_ffmpeg(const std::string& what, int code);

 private:
  static int read_packet(void* opaque, uint8_t* buf, int buf_size);
  static int64_t seek(void* opaque, int64_t offset, int whence);

  std::unique_ptr<Source> source_;
  uint64_t pos_ = 0;
  std::exception_ptr read_error_;
  struct AvioDeleter {
    void operator()(AVIOContext* p) const;
  };
  struct FormatDeleter {
    void operator()(AVFormatContext* p) const { avformat_close_input(&p); }
  };
  // declared in this order so that the demuxer closes before its byte reader is freed
  std::unique_ptr<AVIOContext, AvioDeleter> avio_;
  std::unique_ptr<AVFormatContext, FormatDeleter> fmt_;
  int stream_index_ = -1;
  bool stream_info_read_ = false;
};

}  // namespace ember::io::ffmpeg
