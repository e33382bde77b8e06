#include "ember/data/recompute_stats.h"

#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/data/stats.h"

namespace ember::data {

std::map<std::string, FeatureStats> recompute_stats(const std::string& root,
                                                    const std::function<void(int64_t, int64_t)>& progress) {
  DatasetOptions tabular;
  tabular.decode_images = false;
  Dataset table(root, tabular);  // numeric features: every frame
  const Metadata& m = table.meta();
  std::unique_ptr<Dataset> cameras;
  if (!m.info.cameras().empty()) cameras = std::make_unique<Dataset>(root);  // cameras: sampled frames
  std::vector<std::map<std::string, FeatureStats>> episodes;
  for (const Episode& ep : m.episodes) {
    std::map<std::string, FeatureStats> stats;
    std::map<std::string, std::vector<double>> values;
    for (int64_t i = ep.from_index; i < ep.to_index; ++i) {
      Item it = table.get(i);
      for (auto& [key, v] : it.values) values[key].insert(values[key].end(), v.data.begin(), v.data.end());
    }
    for (auto& [key, v] : values) {
      const Feature* f = m.info.find(key);
      int64_t dims = std::max<int64_t>(1, f ? f->numel() : 1);
      if (!v.empty()) stats[key] = compute_stats(v, dims, ep.length);
    }
    if (cameras && ep.length > 0) {
      std::map<std::string, std::vector<io::Image>> sampled;
      for (int64_t k : sample_frame_indices(ep.length)) {
        Item it = cameras->get(ep.from_index + k);
        for (auto& [cam, images] : it.images)
          for (auto& im : images) sampled[cam].push_back(std::move(im));
      }
      for (const auto& [cam, images] : sampled) stats[cam] = compute_image_stats(images);
    }
    episodes.push_back(std::move(stats));
    if (progress) progress(int64_t(episodes.size()), int64_t(m.episodes.size()));
  }
  return aggregate_stats(episodes);
}

}  // namespace ember::data
