// Rollout video frames made for watching: each side-by-side frame (agentview | wrist, [n, 2n, 3])
// scaled up by whole pixels to at least 256 rows, under a band that labels the two cameras.
#pragma once

#include <cstdint>
#include <vector>

namespace ember::eval {

struct FrameSize {
  int width = 0, height = 0;  // both even (what H.264 needs)
};

// The size present_frame makes of an [n, 2n, 3] frame.
FrameSize presented_size(int n);

// frame [n, 2n, 3] RGB -> [height, width, 3] of presented_size(n): a dark band with "agentview"
// and "wrist" over each camera, then the frame scaled up (nearest pixel).
std::vector<uint8_t> present_frame(const std::vector<uint8_t>& frame, int n);

}  // namespace ember::eval
