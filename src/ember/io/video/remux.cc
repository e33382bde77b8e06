// concat_videos with FFmpeg: read every input's header first (so that a mismatch fails before
// anything is written), then copy the packets of each input in turn, shifted by the exact
// duration of the inputs before it.
#include "ember/io/video/remux.h"

#include <algorithm>
#include <limits>
#include <new>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/io/video/ffmpeg_input.h"
#include "ember/io/video/ffmpeg_output.h"

extern "C" {
#include <libavutil/pixdesc.h>
}

namespace ember::io {

namespace {

struct ParamsDeleter {
  void operator()(AVCodecParameters* p) const { avcodec_parameters_free(&p); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};

std::string rational_text(AVRational r) {
  return std::to_string(r.num) + "/" + std::to_string(r.den);
}

// What must agree between inputs for their packets to form one stream.
struct StreamParams {
  std::string path;
  std::unique_ptr<AVCodecParameters, ParamsDeleter> codecpar;
  AVRational time_base{};
  AVRational frame_rate{};  // the container's base rate
};

StreamParams read_params(const std::string& path) {
  ffmpeg::Input in(open_file(path));
  in.find_stream_info();  // the pixel format may only be known from the first packets
  StreamParams p;
  p.path = path;
  p.codecpar.reset(avcodec_parameters_alloc());
  if (!p.codecpar || avcodec_parameters_copy(p.codecpar.get(), in.stream()->codecpar) < 0) {
    throw std::bad_alloc();
  }
  p.time_base = in.stream()->time_base;
  p.frame_rate = in.stream()->r_frame_rate;
  return p;
}

void check_same(const StreamParams& first, const StreamParams& p) {
  auto differ = [&](const std::string& what) {
    fail(ErrorKind::kInvalidArgument,
         p.path + ": cannot be joined to " + first.path + " without re-encoding: its " + what);
  };
  auto size = [](const AVCodecParameters& c) {
    return std::to_string(c.width) + "x" + std::to_string(c.height);
  };
  auto pix_fmt = [](int f) {
    const char* n = av_get_pix_fmt_name(static_cast<AVPixelFormat>(f));
    return std::string(n != nullptr ? n : "unknown");
  };
  const AVCodecParameters& a = *first.codecpar;
  const AVCodecParameters& b = *p.codecpar;
  if (a.codec_id != b.codec_id) {
    differ(std::string("codec is ") + avcodec_get_name(b.codec_id) + ", not " +
           avcodec_get_name(a.codec_id));
  }
  if (a.width != b.width || a.height != b.height) {
    differ("picture size is " + size(b) + ", not " + size(a));
  }
  if (a.format != b.format)
    differ("pixel format is " + pix_fmt(b.format) + ", not " + pix_fmt(a.format));
  if (av_cmp_q(first.time_base, p.time_base) != 0) {
    differ("time base is " + rational_text(p.time_base) + ", not " +
           rational_text(first.time_base));
  }
  if (av_cmp_q(first.frame_rate, p.frame_rate) != 0) {
    differ("frame rate is " + rational_text(p.frame_rate) + ", not " +
           rational_text(first.frame_rate));
  }
  // the decoder of the joined file gets the first file's configuration (SPS/PPS, AV1
  // sequence header) only
  if (a.extradata_size != b.extradata_size ||
      !std::equal(a.extradata, a.extradata + a.extradata_size, b.extradata)) {
    differ("codec configuration (extradata: SPS/PPS, sequence header) differs");
  }
}

// Copies the packets of one input into out, shifted so that its first frame is at offset
// (input time base == tb). Returns the input's duration in tb: its last frame's end minus
// its first frame's start. last_dts carries the decode order check across inputs.
int64_t copy_packets(const std::string& path, int64_t offset, AVRational tb, ffmpeg::Output& out,
                     int64_t& last_dts, int64_t& num_frames) {
  ffmpeg::Input in(open_file(path));
  AVStream* ist = in.stream();
  AVStream* ost = out.format()->streams[0];
  const int64_t start = in.start_pts();
  // a packet without a duration lasts one frame of the base rate
  const int64_t frame_ticks =
      ist->r_frame_rate.num > 0 ? av_rescale_q(1, av_inv_q(ist->r_frame_rate), tb) : 0;
  std::unique_ptr<AVPacket, PacketDeleter> holder(av_packet_alloc());
  if (!holder) throw std::bad_alloc();
  AVPacket* pkt = holder.get();
  int64_t first = std::numeric_limits<int64_t>::max(), end = start;
  num_frames = 0;
  int rc = 0;
  while ((rc = av_read_frame(in.format(), pkt)) >= 0) {
    if (pkt->stream_index != in.stream_index()) {
      av_packet_unref(pkt);
      continue;
    }
    if (pkt->flags & AV_PKT_FLAG_DISCARD) {
      fail_unsupported(path + ": its edit list drops frames; re-encode it before joining");
    }
    if (pkt->pts == AV_NOPTS_VALUE) fail_corrupt(path + ": a packet has no presentation time");
    if (pkt->duration <= 0) {
      if (frame_ticks <= 0)
        fail_corrupt(path + ": a packet has no duration and the stream no frame rate");
      pkt->duration = frame_ticks;
    }
    first = std::min(first, pkt->pts);
    end = std::max(end, pkt->pts + pkt->duration);

    // shift into the joined stream
    pkt->pts += offset - start;
    if (pkt->dts != AV_NOPTS_VALUE) {
      pkt->dts += offset - start;
      if (last_dts != AV_NOPTS_VALUE && pkt->dts <= last_dts) {
        fail(ErrorKind::kInvalidArgument,
             path +
                 ": its decode times would run backwards where it joins the previous input "
                 "(a different reorder delay: encode the inputs with the same settings)");
      }
      last_dts = pkt->dts;
    }
    pkt->stream_index = ost->index;
    pkt->pos = -1;
    av_packet_rescale_ts(pkt, tb, ost->time_base);
    out.write(pkt);
    ++num_frames;
  }
  if (rc != AVERROR_EOF) in.fail_ffmpeg("cannot read a packet", rc);
  if (num_frames == 0) fail_corrupt(path + ": has no frames");
  if (first != start) {
    // the decoder counts time from start: frame 0 would not sit at from_timestamp
    fail_corrupt(path + ": the first frame is at pts " + std::to_string(first) +
                 " but the stream says it starts at " + std::to_string(start));
  }
  return end - start;
}

}  // namespace

std::vector<ConcatPart> concat_videos(const std::vector<std::string>& inputs,
                                      const std::string& output) {
  if (inputs.empty()) fail(ErrorKind::kInvalidArgument, output + ": no videos to join");

  // every header first: a mismatch fails before anything is written
  StreamParams first = read_params(inputs[0]);
  for (size_t i = 1; i < inputs.size(); ++i) check_same(first, read_params(inputs[i]));

  // the joined stream: the first input's parameters, in its time base
  ffmpeg::Output out(output);
  AVStream* ost = out.add_stream();
  if (avcodec_parameters_copy(ost->codecpar, first.codecpar.get()) < 0) throw std::bad_alloc();
  ost->codecpar->codec_tag = 0;  // let the MP4 muxer pick its tag for the codec
  ost->time_base = first.time_base;
  ost->avg_frame_rate = first.frame_rate;
  out.write_header();

  std::vector<ConcatPart> parts(inputs.size());
  const AVRational tb = first.time_base;
  int64_t offset = 0;  // start of the next input, in tb: exact, no rounding
  int64_t last_dts = AV_NOPTS_VALUE;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ConcatPart& part = parts[i];
    int64_t duration = copy_packets(inputs[i], offset, tb, out, last_dts, part.num_frames);
    part.from_timestamp = static_cast<double>(offset) * av_q2d(tb);
    offset += duration;
    part.to_timestamp = static_cast<double>(offset) * av_q2d(tb);
  }
  out.finish();
  return parts;
}

}  // namespace ember::io
