// A client's observation (a decoded msgpack map) as the dataset item the policy's SampleBuilder
// reads: which key fills which feature (the key map), and what each value must look like.
//
// The policy's features, by name: each camera (its dataset key, e.g. observation.images.top; not
// the empty slots), the state (e.g. observation.state), "task" (the instruction, as LeRobot names
// it) and "noise" (ember's own: the initial flow noise, so that a client can reproduce a result).
// The default map understands those names themselves and openpi's LIBERO client:
//   observation/image        -> the first camera        observation/state -> the state
//   observation/wrist_image  -> the second camera       prompt            -> task
// --obs_map (a JSON object, client key -> feature name, or null to accept and ignore the key)
// adds to it and overrides it. Nested maps arrive flattened with '/' ({"images": {"top": x}} is
// the key "images/top").
//
// Values: a camera is an ndarray of uint8 [H, W, 3] (or [3, H, W]), or float32/64 in [0, 1]
// (clamped, then uint8(255 x) as openpi's server converts them), of any size (the policy's
// processor resizes it as for a dataset frame); the state an ndarray (or a list) of
// state_dim finite float32/64 values (the checkpoint's features.json; padding to the policy's
// width follows as in training); task a string (str, bytes, a NumPy str scalar or 0-d array);
// noise an ndarray of finite floats [H, max_action_dim] (or [1, H, max_action_dim]).
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/model/policy_shape.h"
#include "ember/model/processor.h"
#include "ember/serve/codec.h"

namespace ember::serve {

inline constexpr const char* kTaskFeature = "task";
inline constexpr const char* kNoiseFeature = "noise";

class ObservationMap {
 public:
  // The default map for a policy with these features, overlaid with `obs_map` (JSON text; empty
  // for none). Throws Error kInvalidArgument naming --obs_map and the entry at fault (not JSON,
  // not an object, a value that is neither a feature name nor null).
  ObservationMap(const model::FeatureSpec& spec, const model::PolicyShape& shape, const std::string& obs_map = "");

  struct Request {
    data::Item item;   // cameras, the state and the task, as a dataset frame would give them
    at::Tensor noise;  // [H, max_action_dim] float32, or undefined: the server draws it
  };
  // The item of an observation (a decoded map). Throws Error kInvalidArgument naming the key:
  // an unknown key, a feature given twice or not at all, a value of the wrong kind, dtype or shape.
  Request request(const Field& observation) const;

  // client key -> feature ("" ignored), for the metadata frame and the docs
  const std::map<std::string, std::string>& keys() const { return keys_; }
  // the features a request must fill: cameras, the state, the task
  const std::vector<std::string>& required() const { return required_; }

 private:
  model::FeatureSpec spec_;
  model::PolicyShape shape_;
  std::map<std::string, std::string> keys_;
  std::vector<std::string> required_;
};

// A request's observation flattened: "a/b" -> value (maps inside maps joined with '/').
std::vector<std::pair<std::string, const Field*>> flatten(const Field& map);

}  // namespace ember::serve
