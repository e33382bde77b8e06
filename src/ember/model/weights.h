// Named tensors to and from safetensors files (the policy's own parameter names, as
// named_parameters() gives them: "vision.blocks.0.qkv.weight", "lm.3.mlp.gate.weight", ...).
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

namespace ember::model {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// Writes the tensors (copied to the CPU, contiguous) atomically. Supported dtypes: float32,
// bfloat16, float16, float64, int64, int32, int16, int8, uint8, bool. Throws Error kIO.
void save_tensors(const std::string& path, const NamedTensors& tensors, const std::map<std::string, std::string>& metadata = {});

// Reads every tensor of a file into CPU tensors (copies). Throws Error kNotFound / kCorruption
// naming the file, kUnsupported for a dtype libtorch lacks here.
std::map<std::string, at::Tensor> load_tensors(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);

// Copies file tensors into the module's parameters by name (converting dtype). Throws
// Error kInvalidArgument naming the file and tensor for a missing name, an unexpected extra
// name, or a shape mismatch; nothing is modified then.
void load_into(const NamedTensors& params, const std::map<std::string, at::Tensor>& tensors, const std::string& what);

}  // namespace ember::model
