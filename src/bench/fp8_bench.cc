#include "bench/fp8_bench.h"

#include <torch/cuda.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "ember/core/error.h"
#include "ember/model/device.h"
#include "ember/model/fp8_linear.h"
#include "ember/model/fp8_mlp.h"
#include "ember/model/fused_ops.h"
#include "ember/model/policy_shape.h"

namespace ember::bench {

namespace {

struct LayerShape {
  std::string name;  // the layers of this shape, e.g. "lm.gate/up"
  int64_t tokens, in, out;
};

// the language backbone's tokens of a batch: 2 cameras and a 48-token prompt per sample
int64_t lm_tokens_of(const model::PolicyShape& s, int64_t batch) { return batch * (2 * s.vision.tokens() + 48); }

std::vector<LayerShape> layer_shapes(const model::PolicyShape& s, int64_t batch) {
  const int64_t lm_tokens = lm_tokens_of(s, batch), ex_tokens = batch * s.horizon;
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

// what an operand's quantisation writes
int64_t bytes_of(const model::Fp8Tensor& t) {
  int64_t n = 0;
  for (const auto* p : {&t.q, &t.scale, &t.qt, &t.scale_t})
    if (p->defined()) n += p->nbytes();
  return n;
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

// The language backbone's gated MLP as a whole: bf16 (three at::linear and gelu_tanh_mul) against
// the fused FP8 function (fp8_mlp.h), and the FP8 function's parts alone: its four activation
// quantisations (x, h from gate|up, dy, [dg | du] from dh) and the weights' (once per step), each
// alone with the bytes it moves, with each quantisation kernel (kernels/fp8_quant.h), and its six
// products on ready operands.
nlohmann::ordered_json mlp_line(const std::string& preset, const model::TowerShape& t, int64_t tokens,
                                const at::Device& device, int warmup, int repeats) {
  const auto bf16 = at::TensorOptions().device(device).dtype(at::kBFloat16);
  nlohmann::ordered_json j;
  j["bench"] = "fp8_linear";
  j["preset"] = preset;
  j["layers"] = "lm.mlp (gate+up+down)";
  j["tokens"] = tokens;
  j["in"] = t.width;
  j["out"] = t.mlp;
  const double flops = 3 * 6.0 * double(tokens) * t.width * t.mlp;
  auto x = at::randn({tokens, t.width}, bf16).requires_grad_();
  auto gate = (at::randn({t.mlp, t.width}, bf16) * 0.02).requires_grad_();
  auto up = (at::randn({t.mlp, t.width}, bf16) * 0.02).requires_grad_();
  auto down = (at::randn({t.width, t.mlp}, bf16) * 0.02).requires_grad_();
  auto dy = at::randn({tokens, t.width}, bf16);
  const double bf16_s = time_it(device, warmup, repeats, [&] {
    at::linear(model::gelu_tanh_mul(at::linear(x, gate), at::linear(x, up)), down).backward(dy);
  });
  at::NoGradGuard no_grad_setup;
  // the operands as the function makes them
  auto xq = model::fp8_quantize_rows(x, true), dyq = model::fp8_quantize_rows(dy, true);
  const auto gate_up = at::cat({gate, up});
  auto wgu = model::fp8_quantize_blocks(gate_up), wd = model::fp8_quantize_blocks(down);
  auto mm = [](const at::Tensor& a, const at::Tensor& sa, const at::Tensor& b, const at::Tensor& sb) {
    return model::fp8_scaled_mm(a, sa, b, sb, at::kBFloat16);
  };
  auto gu = mm(xq.q, xq.scale.t(), wgu.q.t(), wgu.scale.t());
  auto dh = mm(dyq.q, dyq.scale.t(), wd.qt.t(), wd.scale_t.t());
  auto hq = model::fp8_quantize_gelu_mul(gu), dgu = model::fp8_quantize_gelu_mul_backward(dh, gu);
  const double products_s = time_it(device, warmup, repeats, [&] {
    mm(xq.q, xq.scale.t(), wgu.q.t(), wgu.scale.t());                   // gu
    mm(hq.q, hq.scale.t(), wd.q.t(), wd.scale.t());                     // y
    mm(dyq.q, dyq.scale.t(), wd.qt.t(), wd.scale_t.t());                // dh
    mm(dyq.qt, dyq.scale_t.t(), hq.qt.t(), hq.scale_t);                 // d down
    mm(dgu.q, dgu.scale.t(), wgu.qt.t(), wgu.scale_t.t());              // dx
    mm(dgu.qt, dgu.scale_t.t(), xq.qt.t(), xq.scale_t);                 // d gate|up
  });
  // each quantisation alone: the bytes it reads (its inputs) and writes (q, q^T, their scales)
  struct Part {
    const char* name;
    double bytes;
    std::function<void()> run;
  };
  const std::vector<Part> activation_parts = {
      {"x", double(x.nbytes() + bytes_of(xq)), [&] { model::fp8_quantize_rows(x, true); }},
      {"h = gelu(g) u", double(gu.nbytes() + bytes_of(hq)), [&] { model::fp8_quantize_gelu_mul(gu); }},
      {"dy", double(dy.nbytes() + bytes_of(dyq)), [&] { model::fp8_quantize_rows(dy, true); }},
      {"[dg | du]", double(dh.nbytes() + gu.nbytes() + bytes_of(dgu)), [&] { model::fp8_quantize_gelu_mul_backward(dh, gu); }},
  };
  const std::vector<Part> weight_parts = {
      {"gate|up blocks", double(gate_up.nbytes() + bytes_of(wgu)), [&] { model::fp8_quantize_blocks(gate_up); }},
      {"down blocks", double(down.nbytes() + bytes_of(wd)), [&] { model::fp8_quantize_blocks(down); }},
  };
  // per quantisation kernel (kernels/fp8_quant.h; the default last, and left selected): the MLP
  // whole, and each quantisation alone
  // (on the CPU: the reference, once)
  const std::vector<std::string> kernels =
      device.is_cuda() ? std::vector<std::string>{"staged", "vector"} : std::vector<std::string>{"reference"};
  for (const auto& kernel : kernels) {
    if (device.is_cuda()) model::set_fp8_quant_kernel(kernel, "fp8 bench");
    nlohmann::ordered_json k;
    double fp8_s = 0;
    {
      at::AutoGradMode grad(true);
      model::Fp8MlpCache cache;
      fp8_s = time_it(device, warmup, repeats, [&] {
        model::fp8_weights_updated();
        model::fp8_gated_mlp(x, gate, up, down, cache).backward(dy);
      });
    }
    k["fp8_ms"] = fp8_s * 1e3;
    k["fp8_speedup"] = bf16_s / fp8_s;
    double activation_s = 0, weight_s = 0;
    nlohmann::ordered_json parts = nlohmann::ordered_json::array();
    for (const auto* group : {&activation_parts, &weight_parts})
      for (const auto& part : *group) {
        const double t = time_it(device, warmup, repeats, part.run);
        (group == &activation_parts ? activation_s : weight_s) += t;
        parts.push_back({{"part", part.name}, {"ms", t * 1e3}, {"gb", part.bytes / 1e9}, {"tb_per_s", part.bytes / t / 1e12}});
      }
    k["activation_quant_ms"] = activation_s * 1e3;  // all four of a step
    k["weight_quant_ms"] = weight_s * 1e3;          // once per optimizer step
    k["quant_parts"] = parts;
    j["quant_kernel_" + kernel] = k;
    if (kernel == kernels.back()) {
      j["fp8_ms"] = fp8_s * 1e3;
      j["fp8_tflops"] = flops / fp8_s / 1e12;
      j["fp8_speedup"] = bf16_s / fp8_s;
      j["activation_quant_ms"] = activation_s * 1e3;
      j["weight_quant_ms"] = weight_s * 1e3;
    }
  }
  j["bf16_ms"] = bf16_s * 1e3;
  j["bf16_tflops"] = flops / bf16_s / 1e12;
  j["fp8_fits"] = true;
  j["products_ms"] = products_s * 1e3;
  j["products_tflops"] = flops / products_s / 1e12;
  return j;
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
  if (model::fp8_fits(shape.lm.width, shape.lm.mlp)) {
    lines.push_back(mlp_line(o.preset, shape.lm, lm_tokens_of(shape, o.batch_size), device, o.warmup, o.repeats).dump());
    std::printf("%s\n", lines.back().c_str());
  }
  return lines;
}

}  // namespace ember::bench
