// What the readers and writers of reference policy directories share (LeRobot / openpi pi0.5:
// lerobot_pi05_*.cc; GR00T-N1.5: groot_n15_io.cc): one-line errors naming the file, typed config
// fields, and checked tensors of a state dict. Not an API beyond those files.
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ember/core/error.h"
#include "ember/data/metadata.h"

namespace ember::model::ref_io {

using ojson = nlohmann::ordered_json;
using TensorMap = std::map<std::string, at::Tensor>;

// Throws Error(kind, where + ": " + what).
[[noreturn]] void bad(const std::string& where, const std::string& what, ErrorKind kind = ErrorKind::kInvalidArgument);
std::string shape_text(at::IntArrayRef s);
// layers prefix0suffix, prefix1suffix, ... present in sd
int count_layers(const TensorMap& sd, const std::string& prefix, const std::string& suffix);
// sd[key] with `dims` dimensions, else an error naming the file and the key (the key by value: the
// reference is to sd's tensor, never to an argument)
const at::Tensor& need(const TensorMap& sd, std::string_view key, const std::string& file, int64_t dims);

// j[key] as T (fallback where absent or null); a wrong type is an error naming the file and field.
template <class T>
T get(const ojson& j, const std::string& key, T fallback, const std::string& file) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    bad(file, "field '" + key + "' has the wrong type (" + j[key].dump() + ")");
  }
}

// The same for a field that must be there.
template <class T>
T required(const ojson& j, const std::string& key, const std::string& file) {
  if (!j.contains(key) || j[key].is_null()) bad(file, "field '" + key + "' is missing", ErrorKind::kCorruption);
  return get<T>(j, key, T{}, file);
}

// A LeRobot processor step's statistics file (safetensors, tensors named <feature>.<statistic>):
// feature -> statistic -> values. Throws kCorruption naming the file and a tensor named otherwise.
std::map<std::string, data::FeatureStats> read_stats_file(const std::filesystem::path& path);

// A step of a LeRobot policy directory's policy_preprocessor.json, found by its registry name:
// its config (an empty object where it has none) and the path of its statistics file (empty
// where the step names none; a name that leaves the directory is refused). nullopt where the
// directory has no policy_preprocessor.json; kCorruption naming the file where its steps are
// malformed or none has the name.
struct ProcessorStep {
  std::string file;  // policy_preprocessor.json's path, for messages
  ojson config;
  std::filesystem::path state_file;
};
std::optional<ProcessorStep> read_processor_step(const std::filesystem::path& dir, const std::string& registry_name);

// The statistics of one feature as a policy needs them: present, with `need` among them, every
// one (count excepted: the frames it was computed over) of `dim` values; else kCorruption naming
// `file` and the statistic.
const data::FeatureStats& feature_stats(const std::map<std::string, data::FeatureStats>& stats, const std::string& key, int64_t dim,
                                        const std::string& file, std::initializer_list<const char*> need = {});

}  // namespace ember::model::ref_io
