// VideoEncoder with FFmpeg: RGB -> (libswscale) -> pix_fmt -> encoder -> MP4 muxer.
#include "ember/io/video/video_encoder.h"

#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>

#include "ember/core/error.h"
#include "ember/io/video/ffmpeg_input.h"
#include "ember/io/video/ffmpeg_output.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace ember::io {

namespace {

struct CodecDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsDeleter {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};
struct DictDeleter {
  void operator()(AVDictionary* d) const { av_dict_free(&d); }
};

// SVT-AV1 prints its configuration to stderr on every encoder it opens, outside FFmpeg's log.
// Like FFmpeg's own lines (ffmpeg::init_logging), they are kept quiet unless the environment
// asks: SVT_LOG or EMBER_FFMPEG_LOG set keeps them. Done once, before the first encoder opens;
// glibc never frees an environment array that a concurrent getenv could be reading.
void quiet_svt_log() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("SVT_LOG") == nullptr && std::getenv("EMBER_FFMPEG_LOG") == nullptr) {
      ::setenv("SVT_LOG", "1", 0);  // errors only
    }
  });
}

std::string size_text(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

// Checks what needs no encoder; returns the pixel format.
AVPixelFormat check_options(const std::string& path, const EncoderOptions& o) {
  auto bad = [&](const std::string& what) {
    fail(ErrorKind::kInvalidArgument, path + ": " + what);
  };
  if (o.width <= 0 || o.height <= 0)
    bad("video size must be > 0, got " + size_text(o.width, o.height));
  if (o.fps_num <= 0 || o.fps_den <= 0) {
    bad("fps must be > 0, got " + std::to_string(o.fps_num) + "/" + std::to_string(o.fps_den));
  }
  if (o.gop < 1) bad("gop must be >= 1, got " + std::to_string(o.gop));
  if (o.threads < 0) bad("encoder threads must be >= 0, got " + std::to_string(o.threads));
  AVPixelFormat fmt = av_get_pix_fmt(o.pix_fmt.c_str());
  if (fmt == AV_PIX_FMT_NONE) bad("unknown pixel format '" + o.pix_fmt + "'");
  // subsampled chroma covers 2^log2 pixels: the size must be a multiple of that
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(fmt);
  int mw = 1 << desc->log2_chroma_w, mh = 1 << desc->log2_chroma_h;
  if (o.width % mw != 0 || o.height % mh != 0) {
    bad(o.pix_fmt + " needs a width that is a multiple of " + std::to_string(mw) +
        " and a height that is a multiple of " + std::to_string(mh) + ", got " +
        size_text(o.width, o.height));
  }
  return fmt;
}

const AVCodec* find_encoder(const std::string& path, const EncoderOptions& o) {
  const AVCodec* codec = avcodec_find_encoder_by_name(o.codec.c_str());
  if (codec == nullptr && !o.fallback_codec.empty()) {
    codec = avcodec_find_encoder_by_name(o.fallback_codec.c_str());
  }
  if (codec == nullptr) {
    fail_unsupported(
        path + ": no encoder '" + o.codec + "'" +
        (o.fallback_codec.empty() ? "" : " (nor the fallback '" + o.fallback_codec + "')") +
        " in this FFmpeg build");
  }
  if (codec->type != AVMEDIA_TYPE_VIDEO) {
    fail(ErrorKind::kInvalidArgument, path + ": '" + codec->name + "' is not a video encoder");
  }
  return codec;
}

bool takes_pix_fmt(const AVCodec* codec, AVPixelFormat fmt) {
  if (codec->pix_fmts == nullptr) return true;  // the encoder does not say
  for (const AVPixelFormat* p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p) {
    if (*p == fmt) return true;
  }
  return false;
}

// "" picks a fast preset for the encoders ember knows; "default" leaves the encoder's own.
std::string preset_for(const std::string& codec, const std::string& preset) {
  if (preset == "default") return "";
  if (!preset.empty()) return preset;
  if (codec == "libsvtav1") return "12";
  if (codec == "libx264") return "veryfast";
  return "";
}

}  // namespace

class VideoEncoder::Impl {
 public:
  Impl(const std::string& path, const EncoderOptions& options);
  ~Impl() { discard_encoder(); }

  void add(const uint8_t* rgb);
  void finish();
  size_t frame_bytes() const { return static_cast<size_t>(options_.width) * options_.height * 3; }

  const std::string& path() const { return path_; }
  const std::string& codec() const { return codec_name_; }
  int64_t frames() const { return next_pts_; }

 private:
  void open_codec(const AVCodec* codec, AVPixelFormat fmt);
  void prepare(AVPixelFormat fmt);
  void open_output();
  void check_usable(const char* call) const;
  void drain();
  void discard_encoder() noexcept;
  [[noreturn]] void fail_ffmpeg(const std::string& what, int code) const {
    fail(ErrorKind::kIO, path_ + ": " + what + ": " + ffmpeg::error_text(code));
  }

  std::string path_;
  EncoderOptions options_;
  std::string codec_name_;
  std::unique_ptr<AVCodecContext, CodecDeleter> ctx_;
  std::unique_ptr<SwsContext, SwsDeleter> sws_;
  std::unique_ptr<AVFrame, FrameDeleter> frame_;
  std::unique_ptr<AVPacket, PacketDeleter> packet_;
  std::unique_ptr<ffmpeg::Output> out_;
  AVStream* stream_ = nullptr;
  int64_t next_pts_ = 0;       // pts of the next frame, in 1/fps: the frame number
  std::exception_ptr failed_;  // the first failure, rethrown by every later call
  bool eos_sent_ = false;      // the encoder was told the stream ends
  bool finished_ = false;
};

VideoEncoder::Impl::Impl(const std::string& path, const EncoderOptions& options)
    : path_(path), options_(options) {
  ffmpeg::init_logging();
  quiet_svt_log();
  AVPixelFormat fmt = check_options(path, options);
  const AVCodec* codec = find_encoder(path, options);
  codec_name_ = codec->name;
  if (!takes_pix_fmt(codec, fmt)) {
    fail_unsupported(path + ": encoder " + codec_name_ + " does not take pixel format " +
                     options.pix_fmt);
  }
  try {
    open_codec(codec, fmt);
    prepare(fmt);
  } catch (...) {
    // an open encoder must be shut down properly before it is freed
    discard_encoder();
    throw;
  }
}

void VideoEncoder::Impl::prepare(AVPixelFormat fmt) {
  const EncoderOptions& options = options_;
  // RGB in, the coded pixel format out; BT.601 limited range both ways, as PyAV and
  // ember's decoder convert
  sws_.reset(sws_getContext(options.width, options.height, AV_PIX_FMT_RGB24, options.width,
                            options.height, fmt, SWS_BILINEAR, nullptr, nullptr, nullptr));
  if (!sws_) fail_unsupported(path_ + ": cannot convert RGB to " + options.pix_fmt);
  frame_.reset(av_frame_alloc());
  packet_.reset(av_packet_alloc());
  if (!frame_ || !packet_) throw std::bad_alloc();
  frame_->format = fmt;
  frame_->width = options.width;
  frame_->height = options.height;
  if (av_frame_get_buffer(frame_.get(), 0) < 0) throw std::bad_alloc();

  open_output();
}

// FFmpeg 5.1's libsvtav1 wrapper waits forever in avcodec_free_context unless the end of
// the stream was signalled and drained, and SVT-AV1 never ends a stream without a picture:
// an encoder abandoned before finish() gets a blank picture if it had none, the end
// signal, and its remaining packets are thrown away. Harmless for other encoders.
void VideoEncoder::Impl::discard_encoder() noexcept {
  AVCodecContext* c = ctx_.get();
  if (c == nullptr || !avcodec_is_open(c) || finished_) return;
  if (!eos_sent_) {
    if (next_pts_ == 0) {
      AVFrame* blank = av_frame_alloc();
      if (blank == nullptr) return;
      blank->format = c->pix_fmt;
      blank->width = c->width;
      blank->height = c->height;
      if (av_frame_get_buffer(blank, 0) >= 0) {
        ptrdiff_t linesize[4] = {blank->linesize[0], blank->linesize[1], blank->linesize[2],
                                 blank->linesize[3]};
        av_image_fill_black(blank->data, linesize, c->pix_fmt, AVCOL_RANGE_MPEG, c->width,
                            c->height);
        blank->pts = 0;
        avcodec_send_frame(c, blank);
      }
      av_frame_free(&blank);
    }
    avcodec_send_frame(c, nullptr);
    eos_sent_ = true;
  }
  AVPacket* pkt = av_packet_alloc();
  if (pkt == nullptr) return;
  while (avcodec_receive_packet(c, pkt) >= 0) av_packet_unref(pkt);
  av_packet_free(&pkt);
}

void VideoEncoder::Impl::open_codec(const AVCodec* codec, AVPixelFormat fmt) {
  const EncoderOptions& o = options_;
  ctx_.reset(avcodec_alloc_context3(codec));
  if (!ctx_) throw std::bad_alloc();
  ctx_->width = o.width;
  ctx_->height = o.height;
  ctx_->pix_fmt = fmt;
  ctx_->time_base = AVRational{o.fps_den, o.fps_num};  // pts counts frames
  ctx_->framerate = AVRational{o.fps_num, o.fps_den};
  ctx_->gop_size = o.gop;
  ctx_->thread_count = o.threads;
  // MP4 keeps the codec configuration in its header (avcC, av1C), not in the stream
  ctx_->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;

  AVDictionary* raw = nullptr;
  if (o.crf >= 0) av_dict_set(&raw, "crf", std::to_string(o.crf).c_str(), 0);
  std::string preset = preset_for(codec_name_, o.preset);
  if (!preset.empty()) av_dict_set(&raw, "preset", preset.c_str(), 0);
  int rc = avcodec_open2(ctx_.get(), codec, &raw);
  std::unique_ptr<AVDictionary, DictDeleter> left(raw);  // options the encoder did not take
  std::string settings = codec_name_ + " encoder for " + size_text(o.width, o.height) + " " +
                         o.pix_fmt + " at " + std::to_string(o.fps_num) + "/" +
                         std::to_string(o.fps_den) + " fps";
  if (rc < 0) {
    // SVT-AV1 only says so in its own log
    std::string hint = codec_name_ == "libsvtav1" && (o.width < 64 || o.height < 64)
                           ? " (SVT-AV1 needs at least 64x64 pixels)"
                           : "";
    fail(ErrorKind::kInvalidArgument,
         path_ + ": cannot open the " + settings + ": " + ffmpeg::error_text(rc) + hint);
  }
  if (const AVDictionaryEntry* e = av_dict_get(left.get(), "", nullptr, AV_DICT_IGNORE_SUFFIX)) {
    fail(ErrorKind::kInvalidArgument, path_ + ": the " + codec_name_ + " encoder has no option '" +
                                          e->key + "' (set to '" + e->value + "')");
  }
}

void VideoEncoder::Impl::open_output() {
  out_ = std::make_unique<ffmpeg::Output>(path_);
  stream_ = out_->add_stream();
  int rc = avcodec_parameters_from_context(stream_->codecpar, ctx_.get());
  if (rc < 0) fail_ffmpeg("cannot set the stream parameters", rc);
  stream_->time_base = ctx_->time_base;
  stream_->avg_frame_rate = ctx_->framerate;
  out_->write_header();  // may change stream_->time_base (MP4: 1/(fps * 2^n))
}

void VideoEncoder::Impl::check_usable(const char* call) const {
  if (failed_) std::rethrow_exception(failed_);
  if (finished_) fail(ErrorKind::kInvalidArgument, path_ + ": " + call + " after finish()");
}

void VideoEncoder::Impl::add(const uint8_t* rgb) {
  check_usable("add_frame()");
  try {
    // the encoder may still hold the last picture: write into a fresh buffer then
    int rc = av_frame_make_writable(frame_.get());
    if (rc < 0) throw std::bad_alloc();
    const uint8_t* src[4] = {rgb, nullptr, nullptr, nullptr};
    int src_stride[4] = {options_.width * 3, 0, 0, 0};
    sws_scale(sws_.get(), src, src_stride, 0, options_.height, frame_->data, frame_->linesize);
    frame_->pts = next_pts_;
    rc = avcodec_send_frame(ctx_.get(), frame_.get());
    if (rc < 0) fail_ffmpeg("cannot encode frame " + std::to_string(next_pts_), rc);
    ++next_pts_;
    drain();
  } catch (...) {
    failed_ = std::current_exception();
    throw;
  }
}

// Moves every packet the encoder has ready into the file.
void VideoEncoder::Impl::drain() {
  AVPacket* pkt = packet_.get();
  for (;;) {
    int rc = avcodec_receive_packet(ctx_.get(), pkt);
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
    if (rc < 0) fail_ffmpeg("cannot encode", rc);
    // every frame lasts one tick of 1/fps; some encoders leave it 0, and the MP4 muxer
    // would then guess the last frame's duration
    if (pkt->duration <= 0) pkt->duration = 1;
    pkt->stream_index = stream_->index;
    av_packet_rescale_ts(pkt, ctx_->time_base, stream_->time_base);
    out_->write(pkt);
    av_packet_unref(pkt);
  }
}

void VideoEncoder::Impl::finish() {
  check_usable("finish()");
  try {
    if (next_pts_ == 0) fail(ErrorKind::kInvalidArgument, path_ + ": no frames to write");
    int rc = avcodec_send_frame(ctx_.get(), nullptr);
    if (rc < 0) fail_ffmpeg("cannot drain the encoder", rc);
    eos_sent_ = true;
    drain();
    out_->finish();
    finished_ = true;
  } catch (...) {
    failed_ = std::current_exception();
    throw;
  }
}

// --- VideoEncoder --------------------------------------------------------------------------

VideoEncoder::VideoEncoder(const std::string& path, const EncoderOptions& options)
    : impl_(std::make_unique<Impl>(path, options)) {}

VideoEncoder::~VideoEncoder() = default;

void VideoEncoder::add_frame(const uint8_t* rgb) { impl_->add(rgb); }

void VideoEncoder::add_frame(std::span<const uint8_t> rgb) {
  if (rgb.size() != impl_->frame_bytes()) {
    fail(ErrorKind::kInvalidArgument,
         path() + ": a frame must be height x width x 3 = " + std::to_string(impl_->frame_bytes()) +
             " bytes, got " + std::to_string(rgb.size()));
  }
  impl_->add(rgb.data());
}

void VideoEncoder::finish() { impl_->finish(); }
const std::string& VideoEncoder::path() const { return impl_->path(); }
const std::string& VideoEncoder::codec() const { return impl_->codec(); }
int64_t VideoEncoder::frames_added() const { return impl_->frames(); }

std::string encode_video(const std::string& path, std::span<const uint8_t> frames,
                         const EncoderOptions& options) {
  VideoEncoder encoder(path, options);
  size_t frame_bytes = static_cast<size_t>(options.width) * options.height * 3;
  if (frames.size() % frame_bytes != 0) {
    fail(ErrorKind::kInvalidArgument, path + ": " + std::to_string(frames.size()) +
                                          " bytes of frames are not a multiple of " +
                                          "height x width x 3 = " + std::to_string(frame_bytes));
  }
  for (size_t at = 0; at < frames.size(); at += frame_bytes) {
    encoder.add_frame(frames.data() + at);
  }
  encoder.finish();
  return encoder.codec();
}

std::string encode_video(const std::string& path, const std::vector<const uint8_t*>& frames,
                         const EncoderOptions& options) {
  VideoEncoder encoder(path, options);
  for (const uint8_t* f : frames) encoder.add_frame(f);
  encoder.finish();
  return encoder.codec();
}

}  // namespace ember::io
