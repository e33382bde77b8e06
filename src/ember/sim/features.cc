#include "ember/sim/features.h"

namespace ember::sim {

namespace {
data::Feature feature(const std::string& key, const std::string& dtype, std::vector<int64_t> shape,
                      nlohmann::json names) {
  data::Feature f;
  f.key = key;
  f.dtype = dtype;
  f.shape = std::move(shape);
  f.names = std::move(names);
  return f;
}

io::Image image(const std::vector<uint8_t>& rgb, int width, int height) {
  io::Image im;
  im.width = width, im.height = height;
  im.rgb = rgb;
  return im;
}
}  // namespace

std::vector<data::Feature> dataset_features(int n, const std::string& camera_dtype) {
  const nlohmann::json image_names = {"height", "width", "channels"};
  return {
      feature(kAgentviewKey, camera_dtype, {n, n, 3}, image_names),
      feature(kWristKey, camera_dtype, {n, n, 3}, image_names),
      feature(kStateKey, "float32", {kStateDim},
              {"ee_x", "ee_y", "ee_z", "ee_ax", "ee_ay", "ee_az", "gripper_left", "gripper_right"}),
      feature(kActionKey, "float32", {kActionDim}, {"dx", "dy", "dz", "drx", "dry", "drz", "gripper"}),
  };
}

data::Frame observation_frame(const Observation& o, const Action& action) {
  data::Frame f;
  f.images[kAgentviewKey] = image(o.agentview, o.width, o.height);
  f.images[kWristKey] = image(o.wrist, o.width, o.height);
  f.values[kStateKey] = std::vector<double>(o.state.begin(), o.state.end());
  f.values[kActionKey] = std::vector<double>(action.begin(), action.end());
  return f;
}

}  // namespace ember::sim
