// VideoDecoder with FFmpeg.
//
// State between calls: the demuxer's read position and the decoder's pipeline, plus the last
// two pictures that came out of the decoder (prev_, cur_, in presentation order). A request
// at or after the midpoint of those two can continue decoding forward, because no picture
// lies between them; any other request seeks.
#include "ember/io/video/video_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <numeric>

#include "ember/core/error.h"
#include "ember/io/video/ffmpeg_input.h"

extern "C" {
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace ember::io {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// seeks for one request before going to the first key frame of the stream
constexpr int kMaxSeekAttempts = 5;
// a seek target (seconds) before any stream's first picture
constexpr double kBeforeStart = -1e6;

std::string seconds(double t) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6f", t);
  return buf;
}

struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct CodecDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct SwsDeleter {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};
using FramePtr = std::unique_ptr<AVFrame, FrameDeleter>;

FramePtr alloc_frame() {
  FramePtr f(av_frame_alloc());
  if (!f) throw std::bad_alloc();
  return f;
}

// AV1 goes to libaom, the reference decoder, where this FFmpeg has it: it checks that each
// tile's entropy-coded data ends where the tile says, so a flipped bit in picture data is an
// error. libdav1d decodes such data into a wrong picture without a flag (two bit flips in
// the fixture's mdat: 680 of 1,000 copies handed over pictures showing other frames, against
// 2 of 1,000 with libaom; libdav1d decodes about 2.3x faster:
// bench/results/video_bitflips_cpu_2026-12-03.md). FFmpeg 5.1's
// native AV1 decoder needs a hardware device, so it is the last resort.
const AVCodec* find_decoder(AVCodecID id, const std::string& av1_decoder) {
  if (id == AV_CODEC_ID_AV1) {
    if (!av1_decoder.empty()) return avcodec_find_decoder_by_name(av1_decoder.c_str());
    for (const char* name : {"libaom-av1", "libdav1d"})
      if (const AVCodec* c = avcodec_find_decoder_by_name(name)) return c;
  }
  return avcodec_find_decoder(id);
}

}  // namespace

bool video_support_available() { return true; }

VideoInfo probe_video(const std::string& path) {
  ffmpeg::Input input(open_file(path));
  input.find_stream_info();
  return input.info();
}

class VideoDecoder::Impl {
 public:
  Impl(std::unique_ptr<Source> source, const DecoderOptions& options);

  const std::string& path() const { return input_.name(); }
  const VideoInfo& info() const { return info_; }
  int out_w() const { return out_w_; }
  int out_h() const { return out_h_; }
  Stats stats() const { return stats_; }
  std::string decoder_name() const { return codec_->codec->name; }

  // Positions cur_ (and prev_) around t and returns the nearest of the two; throws past
  // the tolerance.
  const AVFrame& nearest_frame(double t, double tolerance);
  void to_rgb(const AVFrame& frame, uint8_t* out);
  double timestamp_of(const AVFrame& frame) const;
  std::vector<double> frame_timestamps();

 private:
  // t (seconds from the stream start) in stream time base
  int64_t to_pts(double t) const { return start_pts_ + std::llround(t / av_q2d(time_base_)); }
  bool can_continue(double t) const;
  void seek(double t);
  void advance_to(double t);
  void seek_and_advance(double t);
  bool decode_next();
  void check_picture(const AVFrame& frame, double ts);
  void check_sequence(const AVFrame& frame, double ts);
  void forget_pictures();

  ffmpeg::Input input_;
  VideoInfo info_;
  DecoderOptions options_;
  int out_w_ = 0, out_h_ = 0;
  AVRational time_base_{};
  int64_t start_pts_ = 0;
  double frame_duration_ = 0;  // seconds, from the nominal rate
  double delay_seconds_ = 0;   // how far decode order runs ahead of presentation

  std::unique_ptr<AVCodecContext, CodecDeleter> codec_;
  std::unique_ptr<AVPacket, PacketDeleter> packet_;
  std::unique_ptr<SwsContext, SwsDeleter> sws_;
  FramePtr prev_, cur_;                    // the last two pictures out of the decoder
  double prev_ts_ = kNaN, cur_ts_ = kNaN;  // their times; NaN when absent
  int64_t fed_dts_ = AV_NOPTS_VALUE;       // dts of the last packet sent to the decoder
  bool flushing_ = false;                  // end of file reached, decoder draining
  bool drained_ = false;                   // decoder has nothing more
  bool lost_ = false;                      // state unknown (after an error or a packet scan): seek
  bool damaged_ = false;                   // a damaged picture came out since the last key frame
  std::vector<int64_t> pending_pts_;       // pts of packets fed whose pictures have not come out
  bool first_since_seek_ = true;           // no picture out since the last seek
  Stats stats_;
};

VideoDecoder::Impl::Impl(std::unique_ptr<Source> source, const DecoderOptions& options)
    : input_(std::move(source)), options_(options) {
  if (options.threads < 0) {
    fail(ErrorKind::kInvalidArgument,
         path() + ": decoder threads must be >= 0, got " + std::to_string(options.threads));
  }
  if (options.max_forward_frames < 0) {
    fail(ErrorKind::kInvalidArgument, path() + ": max_forward_frames must be >= 0, got " +
                                          std::to_string(options.max_forward_frames));
  }
  if ((options.width > 0) != (options.height > 0) || options.width < 0 || options.height < 0) {
    fail(ErrorKind::kInvalidArgument,
         path() + ": resize needs both width and height > 0 (or both 0), got " +
             std::to_string(options.width) + "x" + std::to_string(options.height));
  }
  info_ = input_.info();
  AVStream* st = input_.stream();
  time_base_ = st->time_base;
  start_pts_ = input_.start_pts();
  frame_duration_ = info_.fps > 0 ? 1.0 / info_.fps : 0.0;
  delay_seconds_ = std::max(st->codecpar->video_delay, 0) * frame_duration_;
  out_w_ = options.width > 0 ? options.width : info_.width;
  out_h_ = options.height > 0 ? options.height : info_.height;

  // the decoder
  const AVCodec* codec = find_decoder(st->codecpar->codec_id, options.av1_decoder);
  if (codec == nullptr) {
    fail_unsupported(path() + ": no decoder for codec '" + info_.codec + "' in this FFmpeg build" +
                     (options.av1_decoder.empty() ? "" : " (asked for " + options.av1_decoder + ")"));
  }
  codec_.reset(avcodec_alloc_context3(codec));
  if (!codec_) throw std::bad_alloc();
  int rc = avcodec_parameters_to_context(codec_.get(), st->codecpar);
  if (rc < 0) input_.fail_ffmpeg("cannot read codec parameters", rc);
  codec_->pkt_timebase = time_base_;
  codec_->thread_count = options.threads;
  codec_->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  rc = avcodec_open2(codec_.get(), codec, nullptr);
  if (rc < 0) {
    fail_unsupported(path() + ": cannot open the " + codec->name +
                     " decoder: " + ffmpeg::error_text(rc));
  }

  packet_.reset(av_packet_alloc());
  if (!packet_) throw std::bad_alloc();
  prev_ = alloc_frame();
  cur_ = alloc_frame();
}

double VideoDecoder::Impl::timestamp_of(const AVFrame& frame) const {
  int64_t pts = frame.pts;
  if (pts == AV_NOPTS_VALUE) pts = frame.best_effort_timestamp;
  if (pts == AV_NOPTS_VALUE) return kNaN;
  return static_cast<double>(pts - start_pts_) * av_q2d(time_base_);
}

void VideoDecoder::Impl::forget_pictures() {
  av_frame_unref(prev_.get());
  av_frame_unref(cur_.get());
  prev_ts_ = cur_ts_ = kNaN;
}

// Continuing is right when no picture between the last one and t was skipped (t at or after
// the midpoint of prev_ and cur_) and it is cheaper than a seek: t is close, or its key
// frame was already fed to the decoder.
bool VideoDecoder::Impl::can_continue(double t) const {
  if (lost_) return false;
  if (std::isnan(cur_ts_)) {
    // freshly opened: the decoder stands before the first picture
    return stats_.frames_decoded == 0 && fed_dts_ == AV_NOPTS_VALUE &&
           t <= options_.max_forward_frames * frame_duration_;
  }
  double earliest = std::isnan(prev_ts_) ? cur_ts_ : 0.5 * (prev_ts_ + cur_ts_);
  if (t < earliest) return false;
  if (drained_ || t - cur_ts_ <= options_.max_forward_frames * frame_duration_) return true;
  AVStream* st = input_.stream();
  int64_t target = to_pts(t);
  int i = av_index_search_timestamp(st, target, AVSEEK_FLAG_BACKWARD);
  const AVIndexEntry* key = i >= 0 ? avformat_index_get_entry(st, i) : nullptr;
  return key != nullptr && fed_dts_ != AV_NOPTS_VALUE && key->timestamp <= fed_dts_;
}

void VideoDecoder::Impl::seek(double t) {
  int64_t target = to_pts(t);
  AVFormatContext* fmt = input_.format();
  int rc = av_seek_frame(fmt, input_.stream_index(), target, AVSEEK_FLAG_BACKWARD);
  if (rc < 0) {
    // some demuxers refuse a target before their first key frame: take the nearest one
    rc = avformat_seek_file(fmt, input_.stream_index(), std::numeric_limits<int64_t>::min(), target,
                            std::numeric_limits<int64_t>::max(), 0);
  }
  if (rc < 0) input_.fail_ffmpeg("cannot seek to t=" + seconds(t) + " s", rc);
  ++stats_.seeks;
  avcodec_flush_buffers(codec_.get());
  forget_pictures();
  fed_dts_ = AV_NOPTS_VALUE;
  flushing_ = drained_ = damaged_ = false;
  pending_pts_.clear();
  first_since_seek_ = true;
}

// Pulls the next picture out of the decoder into cur_ (the old cur_ becomes prev_), feeding
// it packets as needed. Returns false at the end of the stream.
bool VideoDecoder::Impl::decode_next() {
  AVCodecContext* ctx = codec_.get();
  if (drained_) return false;
  av_frame_unref(prev_.get());
  std::swap(prev_, cur_);
  prev_ts_ = cur_ts_;
  cur_ts_ = kNaN;
  for (;;) {
    int rc = avcodec_receive_frame(ctx, cur_.get());
    if (rc == 0) {
      ++stats_.frames_decoded;
      cur_ts_ = timestamp_of(*cur_);
      if (std::isnan(cur_ts_)) fail_corrupt(path() + ": decoded picture has no timestamp");
      check_sequence(*cur_, cur_ts_);
      check_picture(*cur_, cur_ts_);
      return true;
    }
    if (rc == AVERROR_EOF) {
      // nothing more: keep the last picture as cur_
      drained_ = true;
      std::swap(prev_, cur_);
      cur_ts_ = prev_ts_;
      prev_ts_ = kNaN;
      av_frame_unref(prev_.get());
      return false;
    }
    if (rc != AVERROR(EAGAIN)) input_.fail_ffmpeg("cannot decode", rc);

    // the decoder wants input: the next packet of our stream, or the end-of-stream marker
    if (flushing_) input_.fail_ffmpeg("decoder asked for input after the end", rc);
    AVPacket* pkt = packet_.get();
    rc = av_read_frame(input_.format(), pkt);
    if (rc == AVERROR_EOF) {
      flushing_ = true;
      rc = avcodec_send_packet(ctx, nullptr);
      if (rc < 0 && rc != AVERROR_EOF) input_.fail_ffmpeg("cannot drain the decoder", rc);
      continue;
    }
    if (rc < 0) input_.fail_ffmpeg("cannot read a packet", rc);
    if (pkt->stream_index != input_.stream_index()) {
      av_packet_unref(pkt);
      continue;
    }
    int64_t pts = pkt->pts;
    if (pkt->dts != AV_NOPTS_VALUE) fed_dts_ = pkt->dts;
    rc = avcodec_send_packet(ctx, pkt);
    av_packet_unref(pkt);
    if (rc >= 0 && pts != AV_NOPTS_VALUE) pending_pts_.push_back(pts);
    if (rc < 0 && rc != AVERROR(EAGAIN)) {
      input_.fail_ffmpeg("cannot decode the packet at t=" +
                             seconds(static_cast<double>(pts - start_pts_) * av_q2d(time_base_)) +
                             " s",
                         rc);
    }
  }
}

// A picture is handed over only as the stream declares it and as its data says: decoders
// conceal damaged data by copying other pictures (a damaged mdat gave frame 96's picture at
// frame 111's time), and a sample entry may declare another size than the coded pictures.
// Both throw, naming the file and the time; the pictures after a damaged one up to the next
// key frame are refused too, since they are predicted from it.
void VideoDecoder::Impl::check_picture(const AVFrame& frame, double ts) {
  if (frame.width != info_.width || frame.height != info_.height) {
    fail_corrupt(path() + ": the picture at t=" + seconds(ts) + " s is " + std::to_string(frame.width) + "x" +
                 std::to_string(frame.height) + ", the stream declares " + std::to_string(info_.width) + "x" +
                 std::to_string(info_.height) + " (damaged sample entry?)");
  }
  bool damaged = frame.decode_error_flags != 0 || (frame.flags & AV_FRAME_FLAG_CORRUPT) != 0;
  if (frame.key_frame && !damaged) damaged_ = false;
  if (damaged) damaged_ = true;
  if (damaged_) {
    fail_corrupt(path() + ": the picture at t=" + seconds(ts) + " s does not decode cleanly" +
                 (damaged ? "" : " (it is predicted from a damaged one)") + ": damaged video data");
  }
}

// Every packet of an MP4 video track (an H.264 access unit, an AV1 temporal unit) gives one
// picture, in presentation order. A packet that gives none was damaged, and the pictures
// after it are predicted from a reference that is not what the encoder had: a dropped AV1
// frame made the next one show the frame before it. The packets fed before the first picture
// after a seek are exempt: a seek that lands between key frames feeds pictures that cannot
// decode.
void VideoDecoder::Impl::check_sequence(const AVFrame& frame, double ts) {
  int64_t pts = frame.pts;
  if (pts == AV_NOPTS_VALUE) return;
  std::sort(pending_pts_.begin(), pending_pts_.end());
  auto at = std::lower_bound(pending_pts_.begin(), pending_pts_.end(), pts);
  bool skipped = at != pending_pts_.begin();
  double skipped_ts = skipped ? static_cast<double>(pending_pts_.front() - start_pts_) * av_q2d(time_base_) : 0;
  if (at != pending_pts_.end() && *at == pts) ++at;
  pending_pts_.erase(pending_pts_.begin(), at);
  if (!skipped || first_since_seek_) {
    first_since_seek_ = false;
    return;
  }
  damaged_ = true;
  fail_corrupt(path() + ": the packet at t=" + seconds(skipped_ts) + " s gives no picture (damaged video data); " +
               "the pictures after it up to the next key frame (from t=" + seconds(ts) + " s) are predicted from it");
}

// Decodes forward until cur_ is at or after t (or the stream ends).
void VideoDecoder::Impl::advance_to(double t) {
  while (std::isnan(cur_ts_) || cur_ts_ < t) {
    if (!decode_next()) break;
  }
}

// Seeks to the key frame at or before t and decodes up to t. Demuxers index key frames by
// decode time, which runs ahead of presentation by the codec's reorder delay, hence the first
// target. If the first picture is still after t and an earlier one could be nearer, or nothing
// decodes (demuxers without an index land by bisection, not always on a key frame), it seeks
// further back.
void VideoDecoder::Impl::seek_and_advance(double t) {
  double target = t - delay_seconds_;
  double backoff = 4 * frame_duration_;
  for (int attempt = 1;; ++attempt) {
    seek(target);
    advance_to(t);
    bool late =
        std::isnan(cur_ts_) || (std::isnan(prev_ts_) && cur_ts_ - t >= 0.5 * frame_duration_ &&
                                cur_ts_ > 0.5 * frame_duration_);
    if (!late || target < kBeforeStart + 1) break;
    target = attempt + 1 >= kMaxSeekAttempts ? kBeforeStart : std::min(target, t) - backoff;
    backoff *= 8;
  }
}

const AVFrame& VideoDecoder::Impl::nearest_frame(double t, double tolerance) {
  if (!std::isfinite(t)) {
    fail(ErrorKind::kInvalidArgument, path() + ": requested time is not finite");
  }
  if (!(tolerance >= 0)) {
    fail(ErrorKind::kInvalidArgument, path() + ": tolerance must be >= 0");
  }
  bool forward = can_continue(t);
  // an exception part way leaves the pipeline in an unknown state: seek next time
  lost_ = true;
  if (forward) {
    advance_to(t);
  } else {
    seek_and_advance(t);
  }
  lost_ = false;
  if (std::isnan(cur_ts_)) {
    fail_corrupt(path() + ": no picture decodes at or after t=" + seconds(t) +
                 " s (the header says the video lasts " + seconds(info_.duration) +
                 " s; truncated or damaged file?)");
  }

  // the nearest of prev_ (before t) and cur_ (at or after t, or the last picture)
  const AVFrame* best = cur_.get();
  double best_ts = cur_ts_;
  if (!std::isnan(prev_ts_) && std::abs(prev_ts_ - t) < std::abs(cur_ts_ - t)) {
    best = prev_.get();
    best_ts = prev_ts_;
  }
  double distance = std::abs(best_ts - t);
  if (distance > tolerance) {
    std::string what = path() + ": no frame within " + seconds(tolerance) +
                       " s of t=" + seconds(t) + " s (nearest frame at t=" + seconds(best_ts) +
                       " s";
    if (drained_ && t > best_ts) {
      if (t < info_.duration - frame_duration_) {
        fail_corrupt(what + ", the last one that decodes; the header says the video lasts " +
                     seconds(info_.duration) + " s: truncated or damaged file?)");
      }
      fail(ErrorKind::kInvalidArgument, what + ", the last one: t is past the end of the video)");
    }
    if (t < best_ts && best_ts <= 0.5 * frame_duration_) {
      fail(ErrorKind::kInvalidArgument, what + ", the first one: t is before the start)");
    }
    fail_corrupt(what + ")");
  }
  return *best;
}

void VideoDecoder::Impl::to_rgb(const AVFrame& frame, uint8_t* out) {
  sws_.reset(sws_getCachedContext(sws_.release(), frame.width, frame.height,
                                  static_cast<AVPixelFormat>(frame.format), out_w_, out_h_,
                                  AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr));
  if (!sws_) {
    const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(frame.format));
    fail_unsupported(path() + ": cannot convert pixel format " +
                     (name != nullptr ? name : "unknown") + " to RGB");
  }
  uint8_t* dst[4] = {out, nullptr, nullptr, nullptr};
  int dst_stride[4] = {out_w_ * 3, 0, 0, 0};
  sws_scale(sws_.get(), frame.data, frame.linesize, 0, frame.height, dst, dst_stride);
}

std::vector<double> VideoDecoder::Impl::frame_timestamps() {
  lost_ = true;
  seek(kBeforeStart);  // (INT64_MIN overflows inside demuxers)
  AVFormatContext* fmt = input_.format();
  int rc = 0;
  std::vector<double> ts;
  AVPacket* pkt = packet_.get();
  while ((rc = av_read_frame(fmt, pkt)) >= 0) {
    if (pkt->stream_index == input_.stream_index()) {
      int64_t pts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
      if (pts != AV_NOPTS_VALUE) {
        ts.push_back(static_cast<double>(pts - start_pts_) * av_q2d(time_base_));
      }
    }
    av_packet_unref(pkt);
  }
  if (rc != AVERROR_EOF) input_.fail_ffmpeg("cannot read a packet", rc);
  std::sort(ts.begin(), ts.end());
  return ts;
}

// --- VideoDecoder --------------------------------------------------------------------------

VideoDecoder::VideoDecoder(const std::string& path, const DecoderOptions& options)
    : VideoDecoder(open_file(path), options) {}

VideoDecoder::VideoDecoder(std::unique_ptr<Source> source, const DecoderOptions& options)
    : impl_(std::make_unique<Impl>(std::move(source), options)) {}

VideoDecoder::~VideoDecoder() = default;

const std::string& VideoDecoder::path() const { return impl_->path(); }
const VideoInfo& VideoDecoder::info() const { return impl_->info(); }
int VideoDecoder::output_width() const { return impl_->out_w(); }
int VideoDecoder::output_height() const { return impl_->out_h(); }
VideoDecoder::Stats VideoDecoder::stats() const { return impl_->stats(); }
std::string VideoDecoder::decoder_name() const { return impl_->decoder_name(); }

double VideoDecoder::decode_into(double t, uint8_t* out, double tolerance) {
  const AVFrame& frame = impl_->nearest_frame(t, tolerance);
  impl_->to_rgb(frame, out);
  return impl_->timestamp_of(frame);
}

Frame VideoDecoder::decode_at(double t, double tolerance) {
  Frame f;
  f.width = output_width();
  f.height = output_height();
  f.rgb.resize(static_cast<size_t>(f.width) * f.height * 3);
  f.timestamp = decode_into(t, f.rgb.data(), tolerance);
  return f;
}

std::vector<Frame> VideoDecoder::decode_many(const std::vector<double>& ts, double tolerance) {
  std::vector<size_t> order(ts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ts[a] < ts[b]; });
  std::vector<Frame> frames(ts.size());
  for (size_t i : order) frames[i] = decode_at(ts[i], tolerance);
  return frames;
}

std::vector<double> VideoDecoder::frame_timestamps() { return impl_->frame_timestamps(); }

}  // namespace ember::io
