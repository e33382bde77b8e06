// serve/observation.h: which client key fills which feature (openpi's LIBERO keys by default,
// --obs_map over them), and what each value must be; every refusal names the key.
#include <gtest/gtest.h>

#include <cstring>

#include "ember/core/error.h"
#include "ember/serve/observation.h"
#include "serve_fixture.h"
#include "test_util.h"

namespace ember::serve {
namespace {

using namespace test_fixture;

struct Policy {
  Policy() : bundle(train::load_policy(checkpoint(), at::kCPU)), map(bundle.spec, bundle.shape) {}
  train::PolicyBundle bundle;
  ObservationMap map;
};

Policy& policy() {
  static Policy p;
  return p;
}

std::string request_error(const Field& obs, const ObservationMap& map = policy().map) {
  return test::error_of([&] { map.request(obs); }, ErrorKind::kInvalidArgument);
}

void expect_has(const std::string& text, const std::string& part) { EXPECT_NE(text.find(part), std::string::npos) << text; }

TEST(ServeObservation, LiberoKeysFillTheCamerasInOrderTheStateAndTheTask) {
  auto& p = policy();
  auto obs = frame_observation(p.bundle, 3);
  auto r = p.map.request(obs);
  ASSERT_EQ(r.item.images.size(), 2u);
  const auto& top = r.item.images.at(p.bundle.spec.cameras[0]).front();
  EXPECT_EQ(std::string(top.rgb.begin(), top.rgb.end()), obs.find("observation/image")->bytes);
  EXPECT_TRUE(r.item.images.count(p.bundle.spec.cameras[1]));
  EXPECT_EQ(r.item.values.at(p.bundle.spec.state_key).data.size(), size_t(p.bundle.spec.state_dim));
  EXPECT_EQ(r.item.task, obs.find("prompt")->bytes);
  EXPECT_FALSE(r.noise.defined());
}

TEST(ServeObservation, ThePolicysOwnFeatureNamesWorkToo) {
  auto& p = policy();
  auto libero = frame_observation(p.bundle, 3);
  Field obs = Field::map();
  obs.set(p.bundle.spec.cameras[0], *libero.find("observation/image"));
  obs.set(p.bundle.spec.cameras[1], *libero.find("observation/wrist_image"));
  obs.set(p.bundle.spec.state_key, *libero.find("observation/state"));
  obs.set("task", *libero.find("prompt"));
  EXPECT_EQ(p.map.request(obs).item.task, libero.find("prompt")->bytes);
}

TEST(ServeObservation, ObsMapAddsKeysNestedMapsAreFlattenedNullIgnores) {
  auto& p = policy();
  const std::string obs_map = R"({"images/cam_high": ")" + p.bundle.spec.cameras[0] + R"(", "images/cam_wrist": ")" +
                              p.bundle.spec.cameras[1] + R"(", "state": ")" + p.bundle.spec.state_key + R"(", "episode": null})";
  ObservationMap map(p.bundle.spec, p.bundle.shape, obs_map);
  auto libero = frame_observation(p.bundle, 3);
  Field images = Field::map();
  images.set("cam_high", *libero.find("observation/image"));
  images.set("cam_wrist", *libero.find("observation/wrist_image"));
  Field obs = Field::map();
  obs.set("images", images);
  obs.set("state", *libero.find("observation/state"));
  obs.set("prompt", *libero.find("prompt"));
  obs.set("episode", Field::real(4));
  auto r = map.request(obs);
  EXPECT_EQ(r.item.images.size(), 2u);
}

TEST(ServeObservation, BadObsMapNamesTheFlagAndTheEntry) {
  auto& p = policy();
  auto err = [&](const std::string& text) {
    return test::error_of([&] { ObservationMap(p.bundle.spec, p.bundle.shape, text); }, ErrorKind::kInvalidArgument);
  };
  expect_has(err("{"), "--obs_map: not JSON");
  expect_has(err("[1]"), "--obs_map: expected a JSON object");
  expect_has(err(R"({"cam": "observation.images.nope"})"), "--obs_map: 'cam' -> \"observation.images.nope\" is not a feature");
  expect_has(err(R"({"cam": 3})"), "'cam' -> 3");
}

TEST(ServeObservation, UnknownMissingAndDoubledKeysAreRefused) {
  auto& p = policy();
  auto obs = frame_observation(p.bundle, 3);
  Field extra = obs;
  extra.set("observation/joint_position", Field::real(0));
  expect_has(request_error(extra), "unknown key 'observation/joint_position'");
  Field missing = Field::map();
  for (const auto& item : obs.items)
    if (item.key != "observation/state") missing.items.push_back(item);
  expect_has(request_error(missing), "missing key 'observation.state' or 'observation/state'");
  Field twice = obs;
  twice.set(p.bundle.spec.state_key, *obs.find("observation/state"));
  expect_has(request_error(twice), "already gave observation.state");
  expect_has(request_error(Field::text("hello")), "the message is not a map");
}

Field with(Field obs, const std::string& key, Field value) {
  obs.set(key, std::move(value));
  return obs;
}

TEST(ServeObservation, WrongDtypesAndShapesNameTheKey) {
  auto& p = policy();
  auto obs = frame_observation(p.bundle, 3);
  expect_has(request_error(with(obs, "observation/state", Field::ndarray("<i4", {8}, std::string(32, '\0')))),
             "key 'observation/state': dtype <i4, expected float32 or float64");
  expect_has(request_error(with(obs, "observation/state", Field::ndarray("<f4", {7}, std::string(28, '\0')))),
             "key 'observation/state': 7 state values, the policy's observation.state has 8");
  expect_has(request_error(with(obs, "observation/state", Field::ndarray("<f4", {2, 4}, std::string(32, '\0')))),
             "key 'observation/state': state of shape [2, 4]");
  expect_has(request_error(with(obs, "observation/state", Field::text("0 1 2"))), "key 'observation/state': the state must be an ndarray");
  std::vector<float> nan(8, 0.0f);
  nan[2] = std::nanf("");
  expect_has(request_error(with(obs, "observation/state", Field::ndarray("<f4", {8}, float_bytes(nan)))),
             "key 'observation/state': value 2 is not finite");
  expect_has(request_error(with(obs, "observation/image", Field::ndarray("|u1", {4, 4, 4}, std::string(64, '\0')))),
             "key 'observation/image': image of shape [4, 4, 4]");
  expect_has(request_error(with(obs, "observation/image", Field::ndarray("<i8", {1, 1, 3}, std::string(24, '\0')))),
             "key 'observation/image': image dtype <i8");
  expect_has(request_error(with(obs, "observation/image", Field::text("a.png"))), "key 'observation/image': a camera image must be an ndarray");
  expect_has(request_error(with(obs, "observation/image", Field::ndarray("|u1", {0, 4, 3}, ""))), "key 'observation/image': image of 0 x 4");
  expect_has(request_error(with(obs, "prompt", Field::real(1))), "key 'prompt': the instruction must be a string");
  expect_has(request_error(with(obs, "noise", Field::ndarray("<f4", {3, 2}, std::string(24, '\0')))),
             "key 'noise': noise of shape [3, 2], the policy needs [10, 32]");
}

TEST(ServeObservation, ChwAndFloatImagesBecomeTheSamePixels) {
  auto& p = policy();
  auto obs = frame_observation(p.bundle, 3);
  const Field& hwc = *obs.find("observation/image");
  const int64_t h = hwc.shape[0], w = hwc.shape[1];
  std::string chw(hwc.bytes.size(), '\0');
  std::vector<float> floats(hwc.bytes.size());
  for (int64_t i = 0; i < h * w; ++i)
    for (int64_t c = 0; c < 3; ++c) chw[size_t(c * h * w + i)] = hwc.bytes[size_t(i * 3 + c)];
  // uint8(255 x), truncated, as openpi's server: (v + 0.5) / 255 gives back v
  for (size_t i = 0; i < floats.size(); ++i) floats[i] = (float(uint8_t(hwc.bytes[i])) + 0.5f) / 255.0f;
  const auto want = p.map.request(obs).item.images.at(p.bundle.spec.cameras[0]).front().rgb;
  for (const Field& v : {Field::ndarray("|u1", {3, h, w}, chw), Field::ndarray("<f4", {h, w, 3}, float_bytes(floats))})
    EXPECT_EQ(p.map.request(with(obs, "observation/image", v)).item.images.at(p.bundle.spec.cameras[0]).front().rgb, want);
}

TEST(ServeObservation, TheInstructionAsNumpyStrAndTheStateAsAList) {
  auto& p = policy();
  auto obs = frame_observation(p.bundle, 3);
  // np.array("pick") is '<U4': UTF-32
  std::string utf32;
  for (char c : std::string("pick")) utf32 += std::string{c, 0, 0, 0};
  EXPECT_EQ(p.map.request(with(obs, "prompt", Field::ndarray("<U4", {}, utf32))).item.task, "pick");
  Field list;
  list.kind = Field::Kind::kList;
  for (int i = 0; i < 8; ++i) list.items.push_back(Field::real(0.5 * i));
  EXPECT_EQ(p.map.request(with(obs, "observation/state", list)).item.values.at(p.bundle.spec.state_key).data[3], 1.5);
}

TEST(ServeObservation, NoiseIsTaken) {
  auto& p = policy();
  auto noise = at::randn({p.bundle.shape.horizon, p.bundle.shape.max_action_dim});
  auto r = p.map.request(with(frame_observation(p.bundle, 3), "noise", noise_field(noise)));
  ASSERT_TRUE(r.noise.defined());
  EXPECT_TRUE(at::equal(r.noise, noise));
}

}  // namespace
}  // namespace ember::serve
