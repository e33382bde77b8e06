// `ember bench policy`: the policy's training speed per attention backend (see
// src/bench/policy_bench.h); `ember bench loader`: the training loader's speed per number
// of threads (src/bench/loader_bench.h); `ember bench jpeg`: JPEG against PNG, and
// `ember bench jpeg_decode`: libjpeg-turbo against nvJPEG (src/bench/jpeg_bench.h);
// `ember bench fp8_linear`: each linear layer in bf16 and FP8 (src/bench/fp8_bench.h).
#include "ember/model/policy_type.h"
#include "cli/commands.h"
#include "cli/flag_ranges.h"
#include "ember/core/error.h"
#include "bench/fp8_bench.h"
#include "bench/jpeg_bench.h"
#include "bench/loader_bench.h"
#include "bench/policy_bench.h"

namespace ember::cli {

void add_bench_policy_command(CLI::App& app, Action& action) {
  CLI::App* bench = app.get_subcommand("bench");
  auto o = std::make_shared<bench::PolicyBenchOptions>();
  auto attention = std::make_shared<std::string>("both");
  CLI::App* cmd = bench->add_subcommand("policy", "training speed of the policy, varlen vs padded attention");
  cmd->add_option("--policy.type", o->policy_type, model::policy_type_names());
  cmd->add_option("--preset", o->preset, [] {
    std::string s;
    for (const auto& t : model::policy_types()) {
      std::string presets;
      for (const auto& p : t.presets) presets += (presets.empty() ? "" : " | ") + p;
      s += (s.empty() ? "" : "; ") + t.name + ": " + presets;
    }
    return s;
  }());
  cmd->add_flag("--policy.tune_backbone", o->tune_backbone, "groot: train the backbone too (default frozen)");
  cmd->add_option("--attention", *attention, "varlen | padded | both (side by side, with the ratio)");
  cmd->add_option("--stream", o->stream, "libero | community");
  cmd->add_option("--device", o->device, "auto | cuda | cpu");
  cmd->add_option("--batch_size", o->batch_sizes,
                  "samples per micro-batch (per optimizer step without accumulation); several, comma-separated: "
                  "each in turn on the same policy")
      ->delimiter(',')
      ->check(in_range(1, 4096));
  cmd->add_option("--gradient_accumulation_steps", o->accumulation,
                  "micro-batches of --batch_size per optimizer step (as ember train's flag)")
      ->check(in_range(1, 1e6));
  cmd->add_flag("--gradient_checkpointing", o->gradient_checkpointing,
                "pi05: recompute each layer's activations in the backward pass (ember train's "
                "--policy.gradient_checkpointing)");
  cmd->add_option("--warmup", o->warmup, "untimed steps first")->check(in_range(0, kMaxRepeats));
  cmd->add_option("--steps", o->steps, "timed steps")->check(in_range(1, kMaxRepeats));
  cmd->add_option("--seed", o->seed, "stream and initialisation seed");
  cmd->add_option("--param_dtype", o->param_dtype, "fp32 (master weights) | bf16 (as ember train's --policy.param_dtype)");
  cmd->add_option("--prefix_multiple", o->prefix_multiple,
                  "varlen: round the packed prefix up to a multiple of N tokens with filler (0: none)")
      ->check(in_range(0, 4096));
  cmd->add_flag("--warm_shapes,!--no_warm_shapes", o->warm_shapes,
                "before timing, one untimed step on each timed batch of new tensor sizes (a long run's steady "
                "state; on by default)");
  cmd->add_flag("--fp8", o->fp8,
                "also run each backend with the language backbone's linear layers in block-wise FP8 (as "
                "--policy.fp8), with the fp8/bf16 ratio");
  cmd->add_option("--fp8_kernels", o->fp8_kernels,
                  "with --fp8: one FP8 run per quantisation kernel, vector (the default) | staged (the first), "
                  "comma-separated")
      ->delimiter(',');
  cmd->add_flag("--phases", o->phases, "also time copy, forward, backward and optimizer (synchronising between them)");
  cmd->add_option("--profile", o->profile, "DIR: a Chrome trace of the timed steps per backend (PyTorch profiler; slows them)");
  cmd->add_option("--profile_after", o->profile_after,
                  "with --profile: record N extra untimed steps after the timed ones instead (the speed figures "
                  "stay unprofiled)")
      ->check(in_range(0, kMaxRepeats));
  cmd->add_flag("--profile_shapes", o->profile_shapes,
                "with --profile: also record operators' input sizes (trace_summary.py: matrix products by shape)");
  cmd->callback([=, &action] {
    action = [=] {
      auto opts = *o;
      if (*attention == "both") {
        opts.backends = {"varlen", "padded"};
      } else {
        opts.backends = {*attention};
      }
      bench::run_policy_bench(opts);
      return 0;
    };
  });

  auto fo = std::make_shared<bench::Fp8BenchOptions>();
  CLI::App* fp8 = bench->add_subcommand("fp8_linear", "each linear layer's forward + backward, bf16 vs block-wise FP8");
  fp8->add_option("--preset", fo->preset, "tiny | small | pi05");
  fp8->add_option("--device", fo->device, "auto | cuda | cpu");
  fp8->add_option("--batch_size", fo->batch_size, "samples per step (sets each layer's token count)")->check(in_range(1, 4096));
  fp8->add_option("--warmup", fo->warmup, "untimed iterations first")->check(in_range(0, kMaxRepeats));
  fp8->add_option("--repeats", fo->repeats, "timed iterations")->check(in_range(1, kMaxRepeats));
  fp8->callback([fo, &action] {
    action = [fo] {
      bench::run_fp8_bench(*fo);
      return 0;
    };
  });

  auto lo = std::make_shared<bench::LoaderBenchOptions>();
  CLI::App* loader = bench->add_subcommand("loader", "training loader speed (no training): samples/s per number of threads");
  loader->add_option("ROOT", lo->root, "a LeRobot dataset, training shards (ember data pack), or their http(s):// or s3:// URL")->required();
  loader->add_option("--shard_window", lo->shard_window, "shards: shards per shuffle window (as --dataset.shard_window)")
      ->check(in_range(0, 1e9));
  loader->add_option("--cache_dir", lo->cache_dir, "remote shards: local cache directory");
  loader->add_option("--preset", lo->preset, "the policy whose shapes the samples take: tiny | small | pi05");
  loader->add_option("--attention", lo->attention, "varlen | padded (the batch layout)");
  loader->add_option("--batch_size", lo->batch_size, "samples per batch")->check(in_range(1, kMaxBatch));
  loader->add_option("--workers", lo->workers, "sample-building threads; several values: one line each")
      ->delimiter(',')
      ->check(in_range(1, kMaxThreads));
  loader->add_option("--warmup", lo->warmup, "untimed batches first")->check(in_range(0, kMaxRepeats));
  loader->add_option("--steps", lo->steps, "timed batches")->check(in_range(1, kMaxRepeats));
  loader->add_option("--image_shift", lo->image_shift, "> 0: random image shifts, as --dataset.image_transforms (a fraction of the size)")
      ->check(in_range(0, 0.5));
  loader->add_flag("--pin_memory", lo->pin_memory, "pin each batch, as ember train does on CUDA");
  loader->add_option("--jpeg_decoder", lo->jpeg_decoder, "shards: cpu | nvjpeg (as --dataset.jpeg_decoder)");
  loader->callback([lo, &action] {
    action = [lo] {
      bench::run_loader_bench(*lo);
      return 0;
    };
  });

  auto jo = std::make_shared<bench::JpegBenchOptions>();
  CLI::App* jpeg = bench->add_subcommand("jpeg", "JPEG quality against bytes, pixel error and decode time on a dataset's frames");
  jpeg->add_option("ROOT", jo->root, "a LeRobot dataset")->required();
  jpeg->add_option("--image_size", jo->image_size, "frames resized to N x N first (default 224)")->check(in_range(8, kMaxImageSize));
  jpeg->add_option("--qualities", jo->qualities, "JPEG qualities, one line each")->delimiter(',')->check(in_range(1, 100));
  jpeg->add_option("--frames", jo->frames, "frames spread over the dataset (default 64)")->check(in_range(1, 100000));
  jpeg->callback([jo, &action] {
    action = [jo] {
      bench::run_jpeg_bench(*jo);
      return 0;
    };
  });

  auto jd = std::make_shared<bench::JpegDecodeBenchOptions>();
  CLI::App* decode = bench->add_subcommand("jpeg_decode", "batches of JPEG frames decoded by libjpeg-turbo (1..N threads) and by nvJPEG");
  decode->add_option("ROOT", jd->root, "a LeRobot dataset (its frames, resized and encoded as ember data pack does)")->required();
  decode->add_option("--image_size", jd->image_size, "frames resized to N x N (default 224)")->check(in_range(8, kMaxImageSize));
  decode->add_option("--quality", jd->quality, "JPEG quality (default 95, ember data pack's)")->check(in_range(1, 100));
  decode->add_option("--batch_size", jd->batch_size, "images a batch (default 32)")->check(in_range(1, 4096));
  decode->add_option("--batches", jd->batches, "timed batches per line (default 20)")->check(in_range(1, kMaxRepeats));
  decode->add_option("--threads", jd->threads, "libjpeg-turbo threads, one line each (default 1,8,16)")
      ->delimiter(',')
      ->check(in_range(1, kMaxThreads));
  decode->add_option("--decoders", jd->decoders, "cpu,nvjpeg (default both)")->delimiter(',');
  decode->callback([jd, &action] {
    action = [jd] {
      bench::run_jpeg_decode_bench(*jd);
      return 0;
    };
  });
}

}  // namespace ember::cli
