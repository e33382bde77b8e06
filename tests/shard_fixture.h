// A small image-feature (PNG) LeRobot dataset whose frames show their global index as stripes
// (stripes.h), for the shard tests: packing it needs no FFmpeg, and a reader that returns the
// wrong sample shows the wrong number whatever JPEG did to the pixels.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/data/dataset_writer.h"
#include "ember/data/shard_pack.h"
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
      // every dimension varies within an episode (aggregated quantiles of a constant have no range)
      const double i = double(index);
      f.values["observation.state"] = {std::sin(0.1 * i), double(k) / lengths[e], double(e) + 0.1 * std::sin(0.3 * i), std::cos(0.37 * i)};
      f.values["action"] = {std::cos(0.1 * i), double(k) * 0.01, std::sin(0.05 * i) - double(e)};
      writer.add_frame(f);
    }
    writer.save_episode(e % 2 ? "open the drawer" : "pick up the cube");
  }
  writer.finalize();
}

// Options for pack_shards in tests: frames of `size`, shards of shard_mb, two threads.
inline data::PackOptions pack_options(int size, double shard_mb = 256, int64_t rows_per_group = 8) {
  data::PackOptions o;
  o.image_size = size;
  o.shard_mb = shard_mb;
  o.rows_per_group = rows_per_group;
  o.threads = 2;
  return o;
}

// How training reads shards: images one row group at a time.
inline data::DatasetOptions shard_reading(std::map<std::string, std::vector<double>> deltas = {}) {
  data::DatasetOptions o;
  o.delta_timestamps = std::move(deltas);
  o.images_by_row_group = true;
  return o;
}

}  // namespace ember::test
