#include "ember/model/reference_io.h"

#include <sstream>

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

}  // namespace ember::model::ref_io
