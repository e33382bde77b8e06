#include "ember/model/reference_io.h"

#include <sstream>

#include "ember/model/policy_type.h"
#include "ember/model/weights.h"

namespace ember::model::ref_io {

void bad(const std::string& where, const std::string& what, ErrorKind kind) { throw Error(kind, where + ": " + what); }

std::string shape_text(at::IntArrayRef s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

int count_layers(const TensorMap& sd, const std::string& prefix, const std::string& suffix) {
  int n = 0;
  while (sd.count(prefix + std::to_string(n) + suffix)) ++n;
  return n;
}

const at::Tensor& need(const TensorMap& sd, std::string_view key_view, const std::string& file, int64_t dims) {
  const std::string key(key_view);
  auto it = sd.find(key);
  if (it == sd.end()) bad(file, "tensor '" + key + "' is missing");
  if (it->second.dim() != dims)
    bad(file, "tensor '" + key + "' has shape " + shape_text(it->second.sizes()) + ", expected " + std::to_string(dims) + " dimensions");
  return it->second;
}

std::map<std::string, data::FeatureStats> read_stats_file(const std::filesystem::path& path) {
  std::map<std::string, data::FeatureStats> out;
  for (const auto& [name, t] : load_tensors(path.string())) {
    auto dot = name.rfind('.');
    if (dot == std::string::npos || dot == 0) bad(path.string(), "tensor '" + name + "' is not named <feature>.<statistic>", ErrorKind::kCorruption);
    auto v = t.to(at::kDouble).contiguous().reshape({-1});
    out[name.substr(0, dot)][name.substr(dot + 1)] = std::vector<double>(v.data_ptr<double>(), v.data_ptr<double>() + v.numel());
  }
  return out;
}

std::optional<ProcessorStep> read_processor_step(const std::filesystem::path& dir, const std::string& registry_name) {
  const std::filesystem::path pre = dir / "policy_preprocessor.json";
  if (!std::filesystem::exists(pre)) return std::nullopt;
  const std::string file = pre.string();
  const ojson j = read_ordered_json(pre);
  if (!j.is_object() || !j.contains("steps") || !j["steps"].is_array()) bad(file, "field 'steps' is missing or not a list", ErrorKind::kCorruption);
  for (size_t i = 0; i < j["steps"].size(); ++i) {
    const auto& step = j["steps"][i];
    if (!step.is_object()) bad(file, "steps[" + std::to_string(i) + "] is " + step.dump() + ", not a processor step (an object)", ErrorKind::kCorruption);
    if (get<std::string>(step, "registry_name", "", file) != registry_name) continue;
    ProcessorStep out{file, step.contains("config") && step["config"].is_object() ? step["config"] : ojson::object(), {}};
    const std::string state_file = get<std::string>(step, "state_file", "", file);
    if (state_file.find('/') != std::string::npos || state_file.starts_with("."))
      bad(file, "state_file '" + state_file + "' is not a file name in the directory");
    if (!state_file.empty()) out.state_file = dir / state_file;
    return out;
  }
  bad(file, "no " + registry_name + " step", ErrorKind::kCorruption);
}

const data::FeatureStats& feature_stats(const std::map<std::string, data::FeatureStats>& stats, const std::string& key, int64_t dim,
                                        const std::string& file, std::initializer_list<const char*> need) {
  auto it = stats.find(key);
  if (it == stats.end()) bad(file, "no statistics for '" + key + "'", ErrorKind::kCorruption);
  for (const char* n : need)
    if (!it->second.count(n)) bad(file, "no '" + key + "." + n + "'", ErrorKind::kCorruption);
  for (const auto& [stat, values] : it->second)
    if (stat != "count" && int64_t(values.size()) != dim)  // count: one value, the frames it was computed over
      bad(file, "statistic '" + key + "." + stat + "' has " + std::to_string(values.size()) + " values, the feature " + std::to_string(dim),
          ErrorKind::kCorruption);
  return it->second;
}

}  // namespace ember::model::ref_io
