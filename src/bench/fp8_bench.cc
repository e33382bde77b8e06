#include "bench/fp8_bench.h"

#include <torch/cuda.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <tuple>

#include "ember/core/error.h"
#include "ember/model/device.h"
#include "ember/model/fp8_linear.h"
#include "ember/model/policy_shape.h"

namespace ember::bench {

namespace {

struct LayerShape {
  std::string name;  // the layers of this shape, e.g. "lm.gate/up"
  int64_t tokens, in, out;
};

std::vector<LayerShape> layer_shapes(const model::PolicyShape& s, int64_t batch) {
  const int64_t lm_tokens = batch * (2 * s.vision.tokens() + 48), ex_tokens = batch * s.horizon;
  std::vector<LayerShape> out;
  for (auto [tower, t, tokens] : {std::tuple{"lm", s.lm, lm_tokens}, std::tuple{"expert", s.expert, ex_tokens}}) {
    const std::string p = tower;
    out.push_back({p + ".q", tokens, t.width, int64_t(t.heads) * t.head_dim});
    out.push_back({p + ".k/v", tokens, t.width, int64_t(t.kv_heads) * t.head_dim});
    out.push_back({p + ".o", tokens, int64_t(t.heads) * t.head_dim, t.width});
    out.push_back({p + ".gate/up", tokens, t.width, t.mlp});
    out.push_back({p + ".down", tokens, t.mlp, t.width});
  }
  return out;
}

// mean seconds of fn over repeats, after warmup calls
double time_it(const at::Device& device, int warmup, int repeats, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) fn();
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / repeats;
}

}  // namespace

std::vector<std::string> run_fp8_bench(const Fp8BenchOptions& o) {
  auto shape = model::preset_shape(o.preset);
  if (o.batch_size < 1) throw Error(ErrorKind::kInvalidArgument, "--batch_size must be at least 1");
  if (o.repeats < 1 || o.warmup < 0) throw Error(ErrorKind::kInvalidArgument, "--repeats must be at least 1 and --warmup at least 0");
  const at::Device device = model::resolve_device(o.device);
  if (auto why = model::fp8_unsupported_reason(device); !why.empty()) throw Error(ErrorKind::kInvalidArgument, "--device: " + why);
  const auto bf16 = at::TensorOptions().device(device).dtype(at::kBFloat16);
  std::vector<std::string> lines;
  at::manual_seed(0);
  for (const auto& l : layer_shapes(shape, o.batch_size)) {
    nlohmann::ordered_json j;
    j["bench"] = "fp8_linear";
    j["preset"] = o.preset;
    j["layers"] = l.name;
    j["tokens"] = l.tokens;
    j["in"] = l.in;
    j["out"] = l.out;
    const double flops = 6.0 * double(l.tokens) * l.in * l.out;  // forward + both gradients
    auto x = (at::randn({l.tokens, l.in}, bf16)).requires_grad_();
    auto w = (at::randn({l.out, l.in}, bf16) * 0.02).requires_grad_();
    auto dy = at::randn({l.tokens, l.out}, bf16);
    const double bf16_s = time_it(device, o.warmup, o.repeats, [&] { at::linear(x, w).backward(dy); });
    j["bf16_ms"] = bf16_s * 1e3;
    j["bf16_tflops"] = flops / bf16_s / 1e12;
    j["fp8_fits"] = model::fp8_fits(l.in, l.out);
    // sizes in whole tiles that fp8_fits still refuses are tried too: whether cuBLASLt takes them
    if (l.in % model::kFp8Tile == 0 && l.out % model::kFp8Tile == 0) try {
      model::Fp8WeightCache cache;
      const double fp8_s = time_it(device, o.warmup, o.repeats, [&] {
        model::fp8_weights_updated();  // one optimizer step per iteration: the weight is re-quantised
        model::fp8_linear(x, w, {}, cache).backward(dy);
      });
      at::NoGradGuard no_grad;
      const double quant_s = time_it(device, o.warmup, o.repeats, [&] { model::fp8_quantize_rows(x, true); });
      j["fp8_ms"] = fp8_s * 1e3;
      j["fp8_tflops"] = flops / fp8_s / 1e12;
      j["fp8_speedup"] = bf16_s / fp8_s;
      j["activation_quant_ms"] = quant_s * 1e3;  // x and x^T tiles, one of the three quantisations per step
    } catch (const c10::Error& e) {
      j["fp8_error"] = e.what_without_backtrace();
    }
    lines.push_back(j.dump());
    std::printf("%s\n", lines.back().c_str());
    std::fflush(stdout);
    x.mutable_grad().reset();
    w.mutable_grad().reset();
  }
  return lines;
}

}  // namespace ember::bench
