// `ember train` (lerobot-train style flags, see src/ember/train/train_config.h) and
// `ember predict` (one action chunk from a checkpoint next to the recorded one).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "cli/commands.h"
#include "cli/rank.h"
#include "cli/stopped.h"
#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/core/output_dir.h"
#include "ember/model/policy_type.h"
#include "ember/model/weights.h"
#include "ember/model/device.h"
#include "ember/dist/env.h"
#include "ember/train/predict.h"
#include "ember/train/trainer.h"

namespace ember::cli {

namespace {

// A float32 tensor as NumPy .npy (format 1.0, C order), atomically.
void write_npy(const std::string& path, const at::Tensor& t) {
  auto c = t.to(at::kFloat).contiguous();
  std::string shape = "(";
  for (int64_t i = 0; i < c.dim(); ++i) shape += (i ? ", " : "") + std::to_string(c.size(i));
  if (c.dim() == 1) shape += ",";
  shape += ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string head = std::string("\x93NUMPY\x01\x00", 8);
  head += char(header.size() & 0xff);
  head += char(header.size() >> 8);
  head += header;
  AtomicFile f(path);
  f.write(head.data(), head.size());
  f.write(c.data_ptr(), size_t(c.nbytes()));
  f.commit();
}

void report(const train::TrainResult& result) {
  if (result.last_checkpoint.empty())
    std::printf("trained to step %lld; no checkpoint (--save_checkpoint=false)\n", (long long)result.steps_done);
  else
    std::printf("trained to step %lld; checkpoint %s\n", (long long)result.steps_done, result.last_checkpoint.c_str());
}

int run_train(const std::vector<std::string>& args) {
  auto config = train::parse_train_flags(args);
  auto env = dist::detect_dist_env();
  if (!env.is_distributed()) {
    // SIGINT / SIGTERM: the step under way is the last, and saved (one process; a job's ranks
    // are stopped by their launcher, and resume from their last checkpoint)
    install_stop_signals();
    auto result = train::train(config);
    if (result.stopped_by) return report_stopped("ember train", result.stopped_by, result.steps_done, result.last_checkpoint);
    report(result);
    return 0;
  }
  // one rank of a job (ember launch, torchrun, srun, mpirun): one GPU per process
  RankOptions ro;
  ro.timeout = std::chrono::milliseconds(int64_t(config.dist.timeout_s * 1000));
  ro.bucket_bytes = int64_t(config.dist.bucket_mb * (1 << 20));
  ro.bf16_gradients = config.dist.reduce_dtype == "bf16";
  return run_rank("train", env, config.device, ro, [&](std::shared_ptr<dist::Collectives> collectives, at::Device) {
    train::TrainerHooks hooks;
    hooks.collectives = std::move(collectives);
    auto result = train::train(config, hooks);
    if (env.rank == 0) report(result);
  });
}

}  // namespace

int print_prediction(const PredictArgs& a) {
  auto device = model::resolve_device(a.device);
  std::optional<std::string> tokenizer;
  if (!a.tokenizer_path.empty()) tokenizer = a.tokenizer_path;
  auto bundle = train::load_policy(a.checkpoint, device, tokenizer);
  at::Tensor noise;
  if (!a.noise.empty()) noise = train::read_noise_file(a.noise, bundle.shape);
  auto p = train::predict_chunk(bundle, a.root, a.index, device, 0, noise, a.noise);
  if (!a.raw_out.empty()) {
    // the model's output before unnormalisation, [H, max_action_dim] float32
    if (a.raw_out.ends_with(".npy")) {
      write_npy(a.raw_out, p.raw);
    } else {
      model::save_tensors(a.raw_out, {{"actions", p.raw}}, {{"format", "pt"}, {"ember.what", "normalised sample_actions [chunk, max_action_dim]"}});
    }
  }
  if (!a.actions_out.empty()) {
    // the predicted chunk in the dataset's units, [H, action_dim] float32 (what `ember serve` answers)
    std::vector<float> flat;
    for (const auto& row : p.predicted) flat.insert(flat.end(), row.begin(), row.end());
    auto actions = at::tensor(flat, at::kFloat).view({int64_t(p.predicted.size()), int64_t(p.predicted[0].size())});
    if (a.actions_out.ends_with(".npy")) {
      write_npy(a.actions_out, actions);
    } else {
      model::save_tensors(a.actions_out, {{"actions", actions}}, {{"format", "pt"}, {"ember.what", "predicted chunk [chunk, action_dim]"}});
    }
  }
  std::printf("frame %lld, task \"%s\", checkpoint step %lld%s\n", (long long)a.index, p.task.c_str(), (long long)bundle.step,
              a.noise.empty() ? "" : (", noise from " + a.noise).c_str());
  std::printf("%4s  %-*s  %s\n", "step", int(p.predicted[0].size() * 8), "predicted", "recorded");
  for (size_t h = 0; h < p.predicted.size(); ++h) {
    std::printf("%4zu ", h);
    for (float x : p.predicted[h]) std::printf(" %7.3f", x);
    std::printf("  ");
    for (float x : p.recorded[h]) std::printf(" %7.3f", x);
    if (p.recorded_is_pad[h]) std::printf("  (past the episode's end)");
    std::printf("\n");
  }
  double err = 0;
  int64_t n = 0;
  for (size_t h = 0; h < p.predicted.size(); ++h) {
    if (p.recorded_is_pad[h]) continue;
    for (size_t d = 0; d < p.predicted[h].size(); ++d, ++n) err += std::abs(p.predicted[h][d] - p.recorded[h][d]);
  }
  std::printf("mean absolute error over recorded steps: %.4f\n", n ? err / n : 0.0);
  if (!a.raw_out.empty()) std::printf("raw model output [%lld, %lld] written to %s\n", (long long)p.raw.size(0), (long long)p.raw.size(1), a.raw_out.c_str());
  return 0;
}

namespace {

int run_export(const std::string& checkpoint, const std::string& to, const std::string& out) {
  std::set<std::string> known;  // the registered types' export formats
  for (const auto& t : model::policy_types())
    if (!t.export_format.empty()) known.insert(t.export_format);
  std::string formats;
  for (const auto& f : known) formats += (formats.empty() ? "" : " | ") + f;
  if (!known.count(to)) fail(ErrorKind::kInvalidArgument, "--to: expected " + formats + ", got '" + to + "'");
  if (out.empty()) fail(ErrorKind::kInvalidArgument, "OUT: missing (ember export --checkpoint DIR --to " + formats + " OUT)");
  check_output_dir(out, "OUT");
  const auto* foreign_type = model::foreign_policy_type(checkpoint);
  const bool foreign = foreign_type != nullptr;
  if (foreign) train::check_export(foreign_type->name, to);  // before the import's notes
  auto bundle = foreign ? train::import_lerobot_bundle(checkpoint, std::nullopt, /*need_tokenizer=*/false)
                        : train::load_policy(checkpoint, at::kCPU);
  for (const auto& note : train::export_policy(bundle, to, out)) std::fprintf(stderr, "ember export: note: %s\n", note.c_str());
  if (to == "lerobot")
    std::printf("wrote %s: a LeRobot %s policy (config.json, model.safetensors, processor files)\n", out.c_str(), bundle.arch->type().c_str());
  else
    std::printf("wrote %s: a %s policy directory (config.json, model.safetensors)\n", out.c_str(), to.c_str());
  return 0;
}

}  // namespace

void add_train_commands(CLI::App& app, Action& action) {
  CLI::App* train = app.add_subcommand("train", "train a policy on a LeRobot dataset (lerobot-train style flags)");
  train->allow_extras();
  train->footer("Flags (--name=value or --name value):\n" + train::train_flags_help() +
                "  --config_path=FILE.json loads a saved train_config.json first.");
  train->callback([train, &action] {
    auto args = train->remaining();
    action = [args] { return run_train(args); };
  });

  auto pa = std::make_shared<PredictArgs>();
  pa->device = "auto";
  CLI::App* predict = app.add_subcommand("predict", "predict one action chunk with a checkpoint, next to the recorded one");
  predict->add_option("--checkpoint", pa->checkpoint,
                      "checkpoint directory, a training output directory (its latest), or a LeRobot / openpi policy directory")->required();
  predict->add_option("--dataset.root", pa->root, "LeRobot dataset")->required();
  predict->add_option("--index", pa->index, "global frame index");
  predict->add_option("--device", pa->device, "auto | cuda | cpu");
  predict->add_option("--policy.tokenizer_path", pa->tokenizer_path, "SentencePiece .model or HF BPE tokenizer.json / directory (needed for a LeRobot directory)");
  predict->add_option("--noise", pa->noise, "initial flow noise, safetensors or .npy, [chunk, max_action_dim]");
  predict->add_option("--raw_out", pa->raw_out, "write the raw (normalised) model output here: safetensors ('actions') or .npy");
  predict->add_option("--actions_out", pa->actions_out, "write the predicted chunk (the dataset's units) here: safetensors ('actions') or .npy");
  predict->callback([pa, &action] { action = [pa] { return print_prediction(*pa); }; });

  auto ex_checkpoint = std::make_shared<std::string>();
  auto ex_to = std::make_shared<std::string>();
  auto ex_out = std::make_shared<std::string>();
  CLI::App* ex = app.add_subcommand("export", "write a checkpoint as a reference policy directory (LeRobot pi0.5, GR00T-N1.5)");
  ex->add_option("--checkpoint", *ex_checkpoint, "checkpoint, training output directory, or LeRobot / openpi directory")->required();
  ex->add_option("--to", *ex_to, "target format: lerobot (pi05) | groot_n15 (groot: Isaac-GR00T's GR00T-N1.5 layout)")->required();
  ex->add_option("out", *ex_out, "output directory (absent or empty)")->required();
  ex->callback([=, &action] { action = [=] { return run_export(*ex_checkpoint, *ex_to, *ex_out); }; });
}

}  // namespace ember::cli
