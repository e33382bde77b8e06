#include "ember/model/groot_n15_metadata.h"

#include <algorithm>
#include <array>
#include <utility>

#include "ember/core/file.h"
#include "ember/model/policy_type.h"
#include "ember/model/reference_io.h"

namespace ember::model {

namespace fs = std::filesystem;
using ref_io::bad;
using ref_io::ojson;

namespace {

// Isaac-GR00T N1.5's EMBODIMENT_TAG_MAPPING (gr00t/data/embodiment_tags.py: new_embodiment,
// oxe_droid, genie1_gripper, gr1) and the tags LeRobot 0.5.1's GrootPackInputsStep adds to it
constexpr std::array<std::pair<std::string_view, int>, 7> kTags{{{"new_embodiment", 31},
                                                                 {"oxe_droid", 17},
                                                                 {"genie1_gripper", 26},
                                                                 {"agibot_genie1", 26},
                                                                 {"gr1", 24},
                                                                 {"so100", 2},
                                                                 {"unitree_g1", 3}}};
constexpr std::array<const char*, 6> kStats{"min", "max", "mean", "std", "q01", "q99"};

const ojson& object_at(const ojson& j, const std::string& key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_object()) bad(where, "field '" + key + "' is missing or not an object", ErrorKind::kCorruption);
  return j[key];
}

int64_t shape_size(const ojson& modality, const std::string& where) {
  if (!modality.contains("shape") || !modality["shape"].is_array()) bad(where, "field 'shape' is missing or not a list", ErrorKind::kCorruption);
  int64_t n = 1;
  for (const auto& d : modality["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) bad(where, "field 'shape' is " + modality["shape"].dump() + ", not sizes", ErrorKind::kCorruption);
    n *= d.get<int64_t>();
  }
  return n;
}

// One of "state" / "action": its parts' statistics concatenated in the file's order.
void read_parts(const ojson& entry, const std::string& kind, const std::string& where, std::vector<std::string>& parts,
                data::FeatureStats& out) {
  const ojson& stats = object_at(object_at(entry, "statistics", where), kind, where + " statistics");
  const ojson* modalities = entry.contains("modalities") && entry["modalities"].is_object() && entry["modalities"].contains(kind)
                                ? &entry["modalities"][kind]
                                : nullptr;
  if (stats.empty()) bad(where + " statistics." + kind, "no parts", ErrorKind::kCorruption);
  std::vector<std::string> common(kStats.begin(), kStats.end());
  for (const auto& [part, values] : stats.items()) {
    const std::string at = where + " statistics." + kind + "." + part;
    if (!values.is_object()) bad(at, "not an object of statistics", ErrorKind::kCorruption);
    int64_t len = -1;
    for (const auto& [name, v] : values.items()) {
      if (!v.is_array() || std::any_of(v.begin(), v.end(), [](const ojson& x) { return !x.is_number(); }))
        bad(at, "field '" + name + "' is not a list of numbers", ErrorKind::kCorruption);
      if (len >= 0 && int64_t(v.size()) != len)
        bad(at, "field '" + name + "' has " + std::to_string(v.size()) + " values, the others " + std::to_string(len), ErrorKind::kCorruption);
      len = int64_t(v.size());
    }
    for (const char* need : {"min", "max"})
      if (!values.contains(need)) bad(at, std::string("field '") + need + "' is missing", ErrorKind::kCorruption);
    if (modalities && modalities->contains(part)) {
      const int64_t n = shape_size((*modalities)[part], where + " modalities." + kind + "." + part);
      if (n != len)
        bad(at, "has " + std::to_string(len) + " values per statistic, modalities." + kind + "." + part + ".shape " + std::to_string(n),
            ErrorKind::kCorruption);
    }
    std::erase_if(common, [&](const std::string& s) { return !values.contains(s); });
    parts.push_back(part);
  }
  for (const auto& name : common)
    for (const auto& [part, values] : stats.items())
      for (const auto& x : values[name]) out[name].push_back(x.get<double>());
}

}  // namespace

int64_t GrootN15Metadata::state_dim() const { return state.count("min") ? int64_t(state.at("min").size()) : 0; }
int64_t GrootN15Metadata::action_dim() const { return action.count("min") ? int64_t(action.at("min").size()) : 0; }

int groot_n15_embodiment_index(std::string_view tag) {
  for (const auto& [name, index] : kTags)
    if (name == tag) return index;
  return -1;
}

std::string groot_n15_embodiment_tag(int index) {
  for (const auto& [name, i] : kTags)
    if (i == index) return std::string(name);
  return "";
}

std::optional<GrootN15Metadata> read_groot_n15_metadata(const fs::path& dir, std::vector<std::string>& notes, int prefer) {
  const fs::path path = dir / "experiment_cfg" / "metadata.json";
  if (!fs::exists(path)) return std::nullopt;
  const std::string file = path.string();
  const ojson j = read_ordered_json(path);
  if (!j.is_object() || j.empty()) bad(file, "not an object of embodiment tags", ErrorKind::kCorruption);
  std::string tags, tag;
  for (const auto& [name, entry] : j.items()) {
    tags += (tags.empty() ? "" : ", ") + name;
    if (j.size() == 1 || groot_n15_embodiment_index(name) == prefer) tag = name;
  }
  if (tag.empty()) {
    notes.push_back(file + " has several embodiments (" + tags + ") and none is new_embodiment: no statistics read");
    return std::nullopt;
  }
  const int index = groot_n15_embodiment_index(tag);
  if (index < 0) {
    notes.push_back(file + ": embodiment tag '" + tag + "' is not one N1.5 names (new_embodiment, oxe_droid, genie1_gripper, gr1, ...): "
                    "its statistics are not read");
    return std::nullopt;
  }
  const ojson& entry = j[tag];
  const std::string where = file + " " + tag;
  if (!entry.is_object()) bad(where, "not an object", ErrorKind::kCorruption);
  GrootN15Metadata m;
  m.tag = tag;
  m.embodiment = index;
  read_parts(entry, "state", where, m.state_parts, m.state);
  read_parts(entry, "action", where, m.action_parts, m.action);
  if (entry.contains("modalities") && entry["modalities"].is_object() && entry["modalities"].contains("video")) {
    const ojson& video = entry["modalities"]["video"];
    if (!video.is_object()) bad(where + " modalities", "field 'video' is not an object", ErrorKind::kCorruption);
    for (const auto& [camera, v] : video.items()) {
      m.cameras.push_back("observation.images." + camera);
      if (m.fps == 0 && v.is_object()) m.fps = ref_io::get<double>(v, "fps", 0.0, where + " modalities.video." + camera);
    }
  }
  return m;
}

std::vector<std::string> write_groot_n15_metadata(const fs::path& out, const FeatureSpec& spec, int image_size) {
  const std::string tag = groot_n15_embodiment_tag(int(spec.embodiment));
  const auto state = spec.stats.find(spec.state_key), action = spec.stats.find(spec.action_key);
  if (tag.empty())
    return {"no experiment_cfg/metadata.json: embodiment " + std::to_string(spec.embodiment) +
            " has no GR00T-N1.5 embodiment tag (Isaac-GR00T's loader needs the robot's statistics from it)"};
  if (state == spec.stats.end() || action == spec.stats.end())
    return {"no experiment_cfg/metadata.json: the checkpoint has no statistics of '" + spec.state_key + "' and '" + spec.action_key + "'"};
  std::vector<std::string> notes;
  auto part_name = [](const std::string& key) { return key.substr(key.rfind('.') + 1); };
  ojson entry = ojson::object();
  ojson modalities{{"video", ojson::object()}, {"state", ojson::object()}, {"action", ojson::object()}};
  for (const auto& camera : spec.cameras)
    modalities["video"][part_name(camera)] = ojson{{"resolution", {image_size, image_size}}, {"channels", 3}, {"fps", spec.fps}};
  for (const auto& [kind, it] : {std::pair{"state", state}, std::pair{"action", action}}) {
    ojson values = ojson::object();
    int64_t len = 0;
    std::string missing;
    for (const char* name : kStats)
      if (it->second.count(name)) {
        values[name] = it->second.at(name);
        len = int64_t(it->second.at(name).size());
      } else {
        missing += (missing.empty() ? "" : ", ") + std::string(name);
      }
    if (!missing.empty())
      notes.push_back("experiment_cfg/metadata.json: '" + it->first + "' has no " + missing +
                      " (the training dataset's meta/stats.json had none; `ember data stats DATASET --write` computes them): "
                      "Isaac-GR00T's loader reads min, max, mean, std, q01 and q99");
    entry["statistics"][kind][part_name(it->first)] = values;
    modalities[kind][part_name(it->first)] = ojson{{"absolute", true}, {"rotation_type", nullptr}, {"shape", {len}}, {"continuous", true}};
  }
  entry["modalities"] = modalities;
  entry["embodiment_tag"] = tag;
  fs::create_directories(out / "experiment_cfg");
  const std::string text = ojson{{tag, entry}}.dump(2) + "\n";
  AtomicFile f((out / "experiment_cfg" / "metadata.json").string());
  f.write(text.data(), text.size());
  f.commit();
  return notes;
}

}  // namespace ember::model
