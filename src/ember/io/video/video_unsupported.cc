// VideoDecoder for builds without FFmpeg (GPU nodes without a package archive): every way
// of opening a video throws kUnsupported naming the file and the reason.
#include "ember/core/error.h"
#include "ember/io/video/video_decoder.h"

namespace ember::io {

namespace {

[[noreturn]] void fail_no_video(const std::string& path) {
  fail_unsupported(path +
                   ": ember was built without video support (FFmpeg not found at build time)");
}

}  // namespace

bool video_support_available() { return false; }

VideoInfo probe_video(const std::string& path) { fail_no_video(path); }

// Never constructed: the constructors throw before impl_ exists.
class VideoDecoder::Impl {};

VideoDecoder::VideoDecoder(const std::string& path, const DecoderOptions&) { fail_no_video(path); }
VideoDecoder::VideoDecoder(std::unique_ptr<Source> source, const DecoderOptions&) {
  fail_no_video(source ? source->name() : std::string("<video>"));
}
VideoDecoder::~VideoDecoder() = default;

const std::string& VideoDecoder::path() const { fail_no_video("<video>"); }
const VideoInfo& VideoDecoder::info() const { fail_no_video("<video>"); }
int VideoDecoder::output_width() const { return 0; }
int VideoDecoder::output_height() const { return 0; }
VideoDecoder::Stats VideoDecoder::stats() const { return {}; }
std::string VideoDecoder::decoder_name() const { return ""; }
double VideoDecoder::decode_into(double, uint8_t*, double) { fail_no_video("<video>"); }
Frame VideoDecoder::decode_at(double, double) { fail_no_video("<video>"); }
std::vector<Frame> VideoDecoder::decode_many(const std::vector<double>&, double) {
  fail_no_video("<video>");
}
std::vector<double> VideoDecoder::frame_timestamps() { fail_no_video("<video>"); }

}  // namespace ember::io
