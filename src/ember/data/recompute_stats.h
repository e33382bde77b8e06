// Recomputes a dataset's normalisation statistics from its frames (`ember data stats`): per
// episode as LeRobot's recorder does, then aggregated as LeRobot's aggregate_stats.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "ember/data/metadata.h"

namespace ember::data {

// Statistics of every numeric feature and every camera (sampled frames, as LeRobot samples
// them). `progress` (may be empty) gets (episodes done, episodes total).
std::map<std::string, FeatureStats> recompute_stats(const std::string& root,
                                                    const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace ember::data
