// A small image-feature (PNG) LeRobot dataset whose frames show their global index as stripes
// (stripes.h), for the shard tests: packing it needs no FFmpeg, and a reader that returns the
// wrong sample shows the wrong number whatever JPEG did to the pixels.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "ember/data/dataset_writer.h"
#include "stripes.h"
#include "test_util.h"

namespace ember::test {

// episodes of `lengths` frames at 10 fps: cameras "observation.images.top" (w x h) and
// "observation.images.wrist", observation.state float32[4], action float32[3], two tasks.
inline void write_stripes_dataset(const std::string& root, const std::vector<int>& lengths, int w = 96, int h = 64) {
  std::vector<data::Feature> features = {
      feature("observation.images.top", "image", {h, w, 3}), feature("observation.images.wrist", "image", {h, w, 3}),
      feature("observation.state", "float32", {4}), feature("action", "float32", {3})};
  auto writer = data::DatasetWriter::create(root, 10, features, "test_arm");
  int64_t index = 0;
  for (size_t e = 0; e < lengths.size(); ++e) {
    for (int k = 0; k < lengths[e]; ++k, ++index) {
      data::Frame f;
      f.images["observation.images.top"] = draw_stripes(index, h, w);
      f.images["observation.images.wrist"] = draw_stripes(index, h, w);
      f.values["observation.state"] = {std::sin(0.1 * double(index)), double(k) / lengths[e], double(e), 0.5};
      f.values["action"] = {std::cos(0.1 * double(index)), double(k) * 0.01, -double(e)};
      writer.add_frame(f);
    }
    writer.save_episode(e % 2 ? "open the drawer" : "pick up the cube");
  }
  writer.finalize();
}

}  // namespace ember::test
