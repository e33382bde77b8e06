// The shard half of `ember data check` on ember's training shards (the LeRobot half is
// check_dataset): meta/shards.json reads; every file it lists exists with its size and CRC-32
// (each piece's too); the data files it lists are exactly those the episodes use, each holding
// the frames the index says; and every image cell decodes as a JPEG of image_size x image_size.
#pragma once

#include <functional>
#include <string>

#include "ember/data/check.h"

namespace ember::data {

// Appends problems to report (and counts frames_decoded). progress: (files done, total).
void check_shards(const std::string& root, CheckReport& report, const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace ember::data
