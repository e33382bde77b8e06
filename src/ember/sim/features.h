// The LeRobot feature keys of ember's sim data, shared by demonstration collection (what the
// dataset holds) and evaluation of a trained policy (how an Observation maps onto the keys the
// policy was trained on).
#pragma once

#include <string>
#include <vector>

#include "ember/data/dataset_writer.h"
#include "ember/sim/env.h"

namespace ember::sim {

inline constexpr const char* kAgentviewKey = "observation.images.agentview";
inline constexpr const char* kWristKey = "observation.images.wrist";
inline constexpr const char* kStateKey = "observation.state";
inline constexpr const char* kActionKey = "action";
inline constexpr const char* kRobotType = "ember_arm7";

// The dataset's user features: both cameras ([n, n, 3], dtype "video" or "image"),
// observation.state (float32 [8]) and action (float32 [7]), with LeRobot-style names.
std::vector<data::Feature> dataset_features(int image_size, const std::string& camera_dtype);
// One dataset frame from an observation (rendered) and the action taken in it.
data::Frame observation_frame(const Observation& obs, const Action& action);

}  // namespace ember::sim
