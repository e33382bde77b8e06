#include "ember/model/reference_io.h"

#include <sstream>

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

}  // namespace ember::model::ref_io
