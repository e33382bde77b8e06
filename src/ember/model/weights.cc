#include "ember/model/weights.h"

#include <cstring>
#include <sstream>

#include "ember/core/error.h"
#include "ember/io/safetensors.h"

#include <ATen/core/grad_mode.h>

namespace ember::model {

namespace st = io::safetensors;

namespace {

st::DType to_st(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return st::DType::kF32;
    case at::kBFloat16: return st::DType::kBF16;
    case at::kHalf: return st::DType::kF16;
    case at::kDouble: return st::DType::kF64;
    case at::kLong: return st::DType::kI64;
    case at::kInt: return st::DType::kI32;
    case at::kShort: return st::DType::kI16;
    case at::kChar: return st::DType::kI8;
    case at::kByte: return st::DType::kU8;
    case at::kBool: return st::DType::kBool;
    default: throw Error(ErrorKind::kUnsupported, std::string("safetensors: cannot store dtype ") + c10::toString(t));
  }
}

std::optional<at::ScalarType> from_st(st::DType t) {
  switch (t) {
    case st::DType::kF32: return at::kFloat;
    case st::DType::kBF16: return at::kBFloat16;
    case st::DType::kF16: return at::kHalf;
    case st::DType::kF64: return at::kDouble;
    case st::DType::kI64: return at::kLong;
    case st::DType::kI32: return at::kInt;
    case st::DType::kI16: return at::kShort;
    case st::DType::kI8: return at::kChar;
    case st::DType::kU8: return at::kByte;
    case st::DType::kBool: return at::kBool;
    default: return std::nullopt;
  }
}

std::string shape_text(at::IntArrayRef s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

}  // namespace

void save_tensors(const std::string& path, const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> cpu;
  std::vector<st::TensorEntry> entries;
  cpu.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    cpu.push_back(t.detach().to(at::kCPU).contiguous());
    const auto& c = cpu.back();
    st::TensorEntry e;
    e.name = name;
    e.dtype = to_st(c.scalar_type());
    e.shape.assign(c.sizes().begin(), c.sizes().end());
    e.bytes = {static_cast<const uint8_t*>(c.data_ptr()), size_t(c.nbytes())};
    entries.push_back(std::move(e));
  }
  st::write_file(path, entries, metadata);
}

std::map<std::string, at::Tensor> load_tensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  auto reader = st::Reader::open(path);
  std::map<std::string, at::Tensor> out;
  for (const auto& info : reader.tensors()) {
    auto type = from_st(info.dtype);
    if (!type) throw Error(ErrorKind::kUnsupported, path + ": tensor " + info.name + " has dtype " + st::dtype_name(info.dtype) + ", which ember cannot load");
    auto view = reader.get(info.name);
    auto t = at::empty(std::vector<int64_t>(info.shape.begin(), info.shape.end()), at::TensorOptions().dtype(*type));
    if (t.nbytes() != view.bytes.size()) throw Error(ErrorKind::kCorruption, path + ": tensor " + info.name + " has the wrong size");
    if (!view.bytes.empty()) std::memcpy(t.data_ptr(), view.bytes.data(), view.bytes.size());
    out.emplace(info.name, std::move(t));
  }
  if (metadata) *metadata = reader.metadata();
  return out;
}

void load_into(const NamedTensors& params, const std::map<std::string, at::Tensor>& tensors, const std::string& what) {
  for (const auto& [name, p] : params) {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw Error(ErrorKind::kInvalidArgument, what + ": tensor '" + name + "' is missing");
    if (it->second.sizes() != p.sizes())
      throw Error(ErrorKind::kInvalidArgument, what + ": tensor '" + name + "' has shape " + shape_text(it->second.sizes()) +
                                                  ", the policy expects " + shape_text(p.sizes()));
  }
  if (tensors.size() != params.size()) {
    for (const auto& [name, t] : tensors) {
      bool known = false;
      for (const auto& pp : params) known = known || pp.first == name;
      if (!known) throw Error(ErrorKind::kInvalidArgument, what + ": unexpected tensor '" + name + "' (not a parameter of this policy)");
    }
  }
  at::NoGradGuard no_grad;
  for (const auto& [name, p] : params) {
    auto src = tensors.at(name);
    const_cast<at::Tensor&>(p).copy_(src.to(p.scalar_type()));
  }
}

}  // namespace ember::model
