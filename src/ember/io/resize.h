// Image resizing as the policy's processor does it (model/processor.cc: torch's
// upsample_bilinear2d, align_corners=false, no antialiasing), on 8-bit RGB, so that frames
// resized once when shards are packed equal what training would compute up to rounding.
#pragma once

#include "ember/io/png.h"

namespace ember::io {

// `image` resized to width x height (both > 0), bilinear, each output pixel rounded to the
// nearest level. Returns the image unchanged when the size already matches.
Image resize_bilinear(const Image& image, int width, int height);

}  // namespace ember::io
