// libFuzzer target: any bytes given to the video decoder (demux + decode) must either give
// frames of the stream's size or raise ember::Error, never crash, hang or read out of bounds.
// It opens the bytes as a video, lists the frame times, and decodes the first frame, the
// last and one in the middle (a seek), as `ember data check` does.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/io/video/video_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  try {
    io::VideoDecoder d(memory_source(std::vector<uint8_t>(data, data + size), "fuzz.mp4"));
    // a header may claim any size; decoding a huge picture only costs time, not correctness
    if (int64_t(d.info().width) * d.info().height > 4096 * 4096) return 0;
    std::vector<double> times = d.frame_timestamps();
    if (times.empty()) return 0;
    for (double t : {times.front(), times[times.size() / 2], times.back()}) {
      io::Frame f = d.decode_at(t, 1e-3);
      // a picture handed over is of the stream's size, at the time asked for
      if (f.width != d.info().width || f.height != d.info().height || !(std::abs(f.timestamp - t) <= 1e-3)) std::abort();
    }
  } catch (const Error&) {
  }
  return 0;
}
