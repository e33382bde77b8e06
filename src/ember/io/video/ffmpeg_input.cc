#include "ember/io/video/ffmpeg_input.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <mutex>

#include "ember/core/error.h"

extern "C" {
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

namespace ember::io::ffmpeg {

namespace {

constexpr int kIOBufferSize = 64 * 1024;

double to_double(AVRational r) { return r.num > 0 && r.den > 0 ? av_q2d(r) : 0.0; }

}  // namespace

std::string error_text(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

void init_logging() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("EMBER_FFMPEG_LOG") == nullptr && av_log_get_level() == AV_LOG_INFO) {
      av_log_set_level(AV_LOG_FATAL);
    }
  });
}

Input::Input(std::unique_ptr<Source> source) : source_(std::move(source)) {
  init_logging();

  // demux through the Source seam: FFmpeg pulls bytes with read_packet / seek
  auto* buffer = static_cast<uint8_t*>(av_malloc(kIOBufferSize));
  if (buffer == nullptr) throw std::bad_alloc();
  avio_.reset(avio_alloc_context(buffer, kIOBufferSize, 0, this, &Input::read_packet, nullptr,
                                 &Input::seek));
  if (avio_ == nullptr) {
    av_free(buffer);
    throw std::bad_alloc();
  }
  AVFormatContext* fmt = avformat_alloc_context();
  if (fmt == nullptr) throw std::bad_alloc();
  fmt->pb = avio_.get();
  fmt->flags |= AVFMT_FLAG_CUSTOM_IO;

  // avformat_open_input frees the context on failure
  int rc = avformat_open_input(&fmt, name().c_str(), nullptr, nullptr);
  if (rc < 0) {
    rethrow_read_error();
    fail_corrupt(name() + ": not a video file FFmpeg can read (" + error_text(rc) + ")");
  }
  fmt_.reset(fmt);

  rc = av_find_best_stream(fmt_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (rc < 0) {
    rethrow_read_error();
    fail_corrupt(name() + ": has no video stream");
  }
  stream_index_ = rc;
  // only the video stream's packets are wanted: the demuxer skips the rest
  for (unsigned i = 0; i < fmt_->nb_streams; ++i) {
    if (static_cast<int>(i) != stream_index_) fmt_->streams[i]->discard = AVDISCARD_ALL;
  }

  // MP4 headers say everything needed; other containers (MPEG-TS, Matroska) leave the
  // picture size, start time or frame rate to be found in the first packets
  const AVStream* st = stream();
  bool no_rate = st->r_frame_rate.num <= 0 && st->avg_frame_rate.num <= 0;
  if (st->codecpar->width <= 0 || st->codecpar->height <= 0 || st->time_base.num <= 0 ||
      st->start_time == AV_NOPTS_VALUE || no_rate) {
    find_stream_info();
  }
}

Input::~Input() = default;

void Input::AvioDeleter::operator()(AVIOContext* p) const {
  av_freep(&p->buffer);
  avio_context_free(&p);
}

void Input::find_stream_info() {
  if (stream_info_read_) return;
  stream_info_read_ = true;
  int rc = avformat_find_stream_info(fmt_.get(), nullptr);
  if (rc < 0) fail_ffmpeg("cannot read stream parameters", rc);
  AVCodecParameters* par = stream()->codecpar;
  if (par->width <= 0 || par->height <= 0) {
    fail_corrupt(name() + ": video stream has no picture size");
  }
}

int64_t Input::start_pts() const {
  int64_t start = stream()->start_time;
  return start == AV_NOPTS_VALUE ? 0 : start;
}

VideoInfo Input::info() const {
  const AVStream* st = stream();
  const AVCodecParameters* par = st->codecpar;
  VideoInfo info;
  info.width = par->width;
  info.height = par->height;
  info.fps = to_double(st->r_frame_rate);
  info.avg_fps = to_double(st->avg_frame_rate);
  if (info.fps == 0) info.fps = info.avg_fps;
  info.codec = avcodec_get_name(par->codec_id);
  const char* pix = av_get_pix_fmt_name(static_cast<AVPixelFormat>(par->format));
  info.pix_fmt = pix != nullptr ? pix : "unknown";
  info.num_frames = st->nb_frames > 0 ? st->nb_frames : -1;
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0) {
    info.duration = static_cast<double>(st->duration) * av_q2d(st->time_base);
  } else if (fmt_->duration != AV_NOPTS_VALUE && fmt_->duration > 0) {
    info.duration = static_cast<double>(fmt_->duration) / AV_TIME_BASE;
  }
  info.start_time = static_cast<double>(start_pts()) * av_q2d(st->time_base);
  return info;
}

void Input::rethrow_read_error() {
  if (read_error_) {
    std::exception_ptr e = std::move(read_error_);
    read_error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void Input::fail_ffmpeg(const std::string& what, int code) {
  rethrow_read_error();
  fail_corrupt(name() + ": " + what + ": " + error_text(code));
}

int Input::read_packet(void* opaque, uint8_t* buf, int buf_size) {
  auto* self = static_cast<Input*>(opaque);
  uint64_t size = self->source_->size();
  if (self->pos_ >= size) return AVERROR_EOF;
  uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(buf_size), size - self->pos_);
  try {
    self->source_->read_at(self->pos_, n, buf);
  } catch (...) {
    self->read_error_ = std::current_exception();
    return AVERROR(EIO);
  }
  self->pos_ += n;
  return static_cast<int>(n);
}

int64_t Input::seek(void* opaque, int64_t offset, int whence) {
  auto* self = static_cast<Input*>(opaque);
  auto size = static_cast<int64_t>(self->source_->size());
  whence &= ~AVSEEK_FORCE;
  if (whence == AVSEEK_SIZE) return size;
  int64_t base = whence == SEEK_SET   ? 0
                 : whence == SEEK_CUR ? static_cast<int64_t>(self->pos_)
                 : whence == SEEK_END ? size
                                      : -1;
  if (base < 0 || base + offset < 0) return AVERROR(EINVAL);
  self->pos_ = static_cast<uint64_t>(base + offset);
  return base + offset;
}

}  // namespace ember::io::ffmpeg
