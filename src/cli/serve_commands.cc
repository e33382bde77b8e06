// `ember serve` (src/ember/serve/serve.h) and `ember bench inference` (src/bench/inference_bench.h):
// flag parsing only.
#include <memory>

#include "bench/inference_bench.h"
#include "cli/commands.h"
#include "cli/flag_ranges.h"
#include "ember/model/policy_type.h"
#include "ember/serve/serve.h"
#include "ember_version.h"

namespace ember::cli {

void add_serve_commands(CLI::App& app, Action& action) {
  auto o = std::make_shared<serve::ServeOptions>();
  CLI::App* s = app.add_subcommand("serve", "serve a policy over openpi's websocket protocol (docs/serve.md)");
  s->add_option("--checkpoint", o->checkpoint, "a checkpoint, a run directory (its latest) or a LeRobot pi0.5 policy directory")->required();
  s->add_option("--policy.tokenizer_path", o->tokenizer_path, "SentencePiece .model or HF BPE tokenizer.json / directory (needed for a LeRobot directory)");
  s->add_option("--host", o->host, "address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)");
  s->add_option("--port", o->port, "port (default 8000; 0: any free port, printed on the first line)");
  s->add_option("--device", o->device, "auto | cuda | cpu");
  s->add_option("--api_key", o->api_key, "require the websocket handshake to carry 'Authorization: Api-Key KEY' (openpi-client's api_key)");
  s->add_option("--obs_map", o->obs_map, "JSON object: client key -> policy feature (a camera key, the state key, task, noise) or null to ignore it");
  s->add_option("--max_batch", o->max_batch, "requests batched at most (B_max, default 8) ...");
  s->add_option("--batch_timeout_ms", o->batch_timeout_ms, "... or when the oldest has waited this long (T_max, default 2)");
  s->add_option("--max_message_mb", o->max_message_mb, "larger messages are refused before they are read (default 64)");
  s->add_option("--max_connections", o->max_connections, "connections at most (default 64)");
  s->add_option("--seed", o->seed, "a connection's k-th request draws its initial noise from seed + k (default 0)");
  s->add_option("--policy.num_steps", o->flow_steps, "denoising steps per chunk (default: the policy's own)")->check(in_range(1, 1000));
  s->add_option("--cuda_graphs", o->cuda_graphs, "true | false: on CUDA, the engine (bf16 weights, one CUDA graph per batch shape; default true) or eager sampling as loaded");
  s->callback([o, &action] { action = [o] { return serve::run_serve(*o); }; });

  CLI::App* bench = app.get_subcommand("bench");
  auto b = std::make_shared<bench::InferenceBenchOptions>();
  CLI::App* cmd = bench->add_subcommand("inference", "action-chunk latency and throughput, in process and (--socket) through ember serve");
  cmd->add_option("--checkpoint", b->checkpoint, "a checkpoint, run directory or LeRobot policy directory (else a fresh --preset policy)");
  cmd->add_option("--policy.type", b->policy_type, model::policy_type_names());
  cmd->add_option("--preset", b->preset, "a fresh policy of this preset (default tiny)");
  cmd->add_option("--policy.tokenizer_path", b->tokenizer_path, "SentencePiece .model or HF BPE tokenizer.json / directory (needed for a LeRobot directory)");
  cmd->add_option("--batch_size", b->batch_sizes, "requests per batch; several: one line each (default 1,4,16)")->delimiter(',');
  cmd->add_option("--iters", b->iters, "timed batches (in process) or requests per client (socket), default 20");
  cmd->add_option("--warmup", b->warmup, "untimed ones first (default 3)");
  cmd->add_option("--device", b->device, "auto | cuda | cpu");
  cmd->add_flag("--socket", b->socket, "also through a loopback ember serve, batch_size clients at once");
  cmd->add_option("--image_size", b->image_size, "the synthetic cameras' side in pixels (default 224)");
  cmd->add_option("--seed", b->seed, "observations, noise and a fresh policy's weights (default 0)");
  cmd->add_option("--cuda_graphs", b->cuda_graphs, "true | false: the engine's CUDA graphs (default true)");
  cmd->add_option("--trace", b->trace, "PATH: profile 3 eager and 3 engine calls at the first batch size into PATH_eager.json, PATH_engine.json");
  cmd->get_option("--checkpoint")->excludes("--preset")->excludes("--policy.type");
  cmd->callback([b, &action] {
    action = [b] {
      bench::run_inference_bench(*b, EMBER_GIT_COMMIT);
      return 0;
    };
  });
}

}  // namespace ember::cli
