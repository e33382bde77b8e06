// VideoEncoder and concat_videos for builds without FFmpeg: each throws kUnsupported naming
// the file and the reason, as opening a video does (video_unsupported.cc).
#include "ember/core/error.h"
#include "ember/io/video/remux.h"
#include "ember/io/video/video_encoder.h"

namespace ember::io {

namespace {

[[noreturn]] void fail_no_video(const std::string& path) {
  fail_unsupported(path +
                   ": ember was built without video support (FFmpeg not found at build time)");
}

}  // namespace

// Never constructed: the constructor throws before impl_ exists.
class VideoEncoder::Impl {};

VideoEncoder::VideoEncoder(const std::string& path, const EncoderOptions&) { fail_no_video(path); }
VideoEncoder::~VideoEncoder() = default;
void VideoEncoder::add_frame(const uint8_t*) { fail_no_video("<video>"); }
void VideoEncoder::add_frame(std::span<const uint8_t>) { fail_no_video("<video>"); }
void VideoEncoder::finish() { fail_no_video("<video>"); }
const std::string& VideoEncoder::path() const { fail_no_video("<video>"); }
const std::string& VideoEncoder::codec() const { fail_no_video("<video>"); }
int64_t VideoEncoder::frames_added() const { return 0; }

std::string encode_video(const std::string& path, std::span<const uint8_t>, const EncoderOptions&) {
  fail_no_video(path);
}
std::string encode_video(const std::string& path, const std::vector<const uint8_t*>&,
                         const EncoderOptions&) {
  fail_no_video(path);
}

std::vector<ConcatPart> concat_videos(const std::vector<std::string>&, const std::string& output) {
  fail_no_video(output);
}

}  // namespace ember::io
