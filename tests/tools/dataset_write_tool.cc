// Writes small LeRobot datasets with ember's DatasetWriter, for tests that read them with other
// tools (pyarrow, LeRobot):
//
//   dataset_write_tool OUT_DIR [--episodes N] [--data-file-size-mb X]
//
// creates OUT_DIR/v30 (v3.0, several data files) and OUT_DIR/v21 (v2.1) holding the same
// frames, plus what was written, for comparison:
//   OUT_DIR/expected.json    fps, features, tasks, and per episode its task and per frame the
//                            numeric values exactly as stored (float32 values as doubles)
//   OUT_DIR/expected_rgb.bin every camera image as raw RGB, in order episode, frame, camera
// Exit status 0 on success, 2 on a user error (message on stderr).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "../test_util.h"
#include "ember/core/error.h"
#include "ember/data/dataset_writer.h"

namespace {

using ember::data::Feature;
using ember::test::feature;
using ember::data::Frame;


std::vector<Feature> features() {
  return {feature("observation.state", "float32", {6}, {"j0", "j1", "j2", "j3", "j4", "gripper"}),
          feature("action", "float32", {4}, {"x", "y", "z", "gripper"}),
          feature("observation.images.top", "image", {24, 32, 3}, {"height", "width", "channels"}),
          feature("observation.images.wrist", "image", {16, 20, 3}, {"height", "width", "channels"}),
          feature("next.reward", "float32", {1}, nullptr),
          feature("next.done", "bool", {1}, nullptr),
          feature("observation.step", "int64", {1}, nullptr)};
}

const char* const kTasks[] = {"pick up the red cube", "open the top drawer", "stack the blocks"};

ember::io::Image picture(int h, int w, int e, int k, int salt) {
  ember::io::Image im;
  im.height = h;
  im.width = w;
  im.rgb.resize(size_t(h) * size_t(w) * 3);
  uint32_t s = uint32_t(e * 7919 + k * 104729 + salt * 15485863);
  for (size_t i = 0; i < im.rgb.size(); ++i) {
    s = s * 1664525u + 1013904223u;
    im.rgb[i] = uint8_t((i / 3 % size_t(w)) * 5 + (s >> 27) + (i % 3) * 40);
  }
  return im;
}

int episode_length(int e) { return 5 + (e * 7) % 13; }

Frame make_frame(int e, int k, int n) {
  Frame f;
  for (int j = 0; j < 6; ++j) f.values["observation.state"].push_back(std::sin(0.3 * k + j + e) * (1 + 0.1 * j));
  for (int j = 0; j < 4; ++j) f.values["action"].push_back(std::cos(0.2 * k - j) * 0.5 + 0.01 * e);
  f.values["next.reward"] = {k == n - 1 ? 1.0 : -0.25 * k};
  f.values["next.done"] = {k == n - 1 ? 1.0 : 0.0};
  f.values["observation.step"] = {double(1000 * e + k)};
  f.images["observation.images.top"] = picture(24, 32, e, k, 1);
  f.images["observation.images.wrist"] = picture(16, 20, e, k, 2);
  return f;
}

// The value as stored: float32 features round to float.
nlohmann::json stored(const std::string& key, const std::vector<double>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (double x : v) {
    if (key == "next.done" || key == "observation.step") out.push_back(x);
    else out.push_back(double(float(x)));
  }
  return out;
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: dataset_write_tool OUT_DIR [--episodes N] [--data-file-size-mb X]\n";
    return 2;
  }
  std::string out = argv[1];
  int episodes = 6;
  double size_mb = 0.1;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--episodes") episodes = std::stoi(argv[i + 1]);
    else if (a == "--data-file-size-mb") size_mb = std::stod(argv[i + 1]);
    else throw ember::Error(ember::ErrorKind::kInvalidArgument, "unknown flag " + a);
  }
  using ember::data::DatasetVersion;
  using ember::data::DatasetWriter;
  ember::data::WriterOptions v3, v2;
  v3.data_file_size_mb = size_mb;
  v3.overwrite = v2.overwrite = true;
  v2.version = DatasetVersion::kV2_1;
  DatasetWriter w3 = DatasetWriter::create(out + "/v30", 30, features(), "ember_test_arm", v3);
  DatasetWriter w2 = DatasetWriter::create(out + "/v21", 30, features(), "ember_test_arm", v2);

  nlohmann::json expected;
  expected["fps"] = 30;
  expected["features"] = nlohmann::json::array();
  for (const Feature& f : features()) expected["features"].push_back({{"key", f.key}, {"dtype", f.dtype}, {"shape", f.shape}});
  expected["episodes"] = nlohmann::json::array();
  std::ofstream rgb(out + "/expected_rgb.bin", std::ios::binary);
  for (int e = 0; e < episodes; ++e) {
    const int n = episode_length(e);
    const std::string task = kTasks[e % 3];
    nlohmann::json ep = {{"task", task}, {"length", n}, {"frames", nlohmann::json::array()}};
    for (int k = 0; k < n; ++k) {
      Frame f = make_frame(e, k, n);
      w3.add_frame(f);
      w2.add_frame(f);
      nlohmann::json row;
      for (const auto& [key, v] : f.values) row[key] = stored(key, v);
      ep["frames"].push_back(row);
      for (const char* cam : {"observation.images.top", "observation.images.wrist"}) {
        const auto& im = f.images.at(cam);
        rgb.write(reinterpret_cast<const char*>(im.rgb.data()), std::streamsize(im.rgb.size()));
      }
    }
    w3.save_episode(task);
    w2.save_episode(task);
    expected["episodes"].push_back(ep);
  }
  rgb.close();
  w3.finalize();
  w2.finalize();
  std::ofstream(out + "/expected.json") << expected.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const ember::Error& e) {
    std::cerr << "dataset_write_tool: " << e.what() << "\n";
    return e.is_user_error() ? 2 : 1;
  } catch (const std::exception& e) {
    std::cerr << "dataset_write_tool: " << e.what() << "\n";
    return 2;
  }
}
