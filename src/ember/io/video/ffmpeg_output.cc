#include "ember/io/video/ffmpeg_output.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "ember/core/error.h"
#include "ember/io/video/ffmpeg_input.h"

namespace ember::io::ffmpeg {

Output::Output(std::string path)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp-" + std::to_string(::getpid())) {
  init_logging();
  // the container is MP4 whatever the name says: LeRobot's videos are .mp4
  int rc = avformat_alloc_output_context2(&fmt_, nullptr, "mp4", tmp_path_.c_str());
  if (rc < 0 || fmt_ == nullptr) {
    fail_unsupported(path_ + ": this FFmpeg build has no MP4 muxer (" + error_text(rc) + ")");
  }
  rc = avio_open(&fmt_->pb, tmp_path_.c_str(), AVIO_FLAG_WRITE);
  if (rc < 0) {
    avformat_free_context(fmt_);
    fmt_ = nullptr;
    fail(ErrorKind::kIO, path_ + ": cannot create " + tmp_path_ + ": " + error_text(rc));
  }
}

Output::~Output() {
  close();
  if (!finished_) std::remove(tmp_path_.c_str());
}

void Output::close() {
  if (fmt_ == nullptr) return;
  avio_closep(&fmt_->pb);
  avformat_free_context(fmt_);
  fmt_ = nullptr;
}

AVStream* Output::add_stream() {
  AVStream* st = avformat_new_stream(fmt_, nullptr);
  if (st == nullptr) throw std::bad_alloc();
  return st;
}

void Output::write_header() {
  int rc = avformat_write_header(fmt_, nullptr);
  if (rc < 0) {
    const AVCodecParameters* par = fmt_->streams[0]->codecpar;
    fail_unsupported(path_ + ": the MP4 muxer refuses a " + avcodec_get_name(par->codec_id) +
                     " stream: " + error_text(rc));
  }
}

void Output::write(AVPacket* packet) {
  int rc = av_interleaved_write_frame(fmt_, packet);
  if (rc < 0) fail_write("cannot write a packet", rc);
}

void Output::finish() {
  // flush what the interleaver holds, then the index (moov)
  int rc = av_interleaved_write_frame(fmt_, nullptr);
  if (rc < 0) fail_write("cannot write a packet", rc);
  rc = av_write_trailer(fmt_);
  if (rc < 0) fail_write("cannot write the MP4 index", rc);
  rc = avio_closep(&fmt_->pb);
  if (rc < 0) fail_write("cannot close " + tmp_path_, rc);
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    fail(ErrorKind::kIO,
         path_ + ": cannot rename " + tmp_path_ + " to it: " + std::strerror(errno));
  }
  finished_ = true;
  close();
}

void Output::fail_write(const std::string& what, int code) {
  fail(ErrorKind::kIO, path_ + ": " + what + ": " + error_text(code));
}

}  // namespace ember::io::ffmpeg
