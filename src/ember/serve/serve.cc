#include "ember/serve/serve.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>

#include "ember/core/error.h"
#include "ember/core/stop_signal.h"
#include "ember/model/device.h"
#include "ember/serve/server.h"
#include "ember/train/policy_checkpoint.h"

namespace ember::serve {

namespace {

[[noreturn]] void bad(const std::string& what) { throw Error(ErrorKind::kInvalidArgument, what); }

Field strings(const std::vector<std::string>& values) {
  Field f;
  f.kind = Field::Kind::kList;
  for (const auto& v : values) f.items.push_back(Field::text(v));
  return f;
}

}  // namespace

void check_serve_options(const ServeOptions& o) {
  if (o.checkpoint.empty()) bad("--checkpoint: name a checkpoint, a run directory or a LeRobot policy directory");
  if (o.port < 0 || o.port > 65535) bad("--port " + std::to_string(o.port) + ": expected 0 (any free port) to 65535");
  if (o.host.empty()) bad("--host: name an address to listen on (127.0.0.1, 0.0.0.0, ::)");
  if (o.max_batch < 1 || o.max_batch > 1024) bad("--max_batch " + std::to_string(o.max_batch) + ": expected 1 to 1024 requests");
  if (!(o.batch_timeout_ms >= 0 && o.batch_timeout_ms <= 60000))
    bad("--batch_timeout_ms: expected 0 to 60000 ms, got " + std::to_string(o.batch_timeout_ms));
  if (!(o.max_message_mb > 0 && o.max_message_mb <= 1024))
    bad("--max_message_mb: expected more than 0 and at most 1024 MB, got " + std::to_string(o.max_message_mb));
  if (o.max_connections < 1 || o.max_connections > 100000)
    bad("--max_connections " + std::to_string(o.max_connections) + ": expected 1 to 100000");
  for (char c : o.api_key)
    if (c <= ' ' || c == 127) bad("--api_key: spaces and control characters cannot travel in the Authorization header");
}

Field serve_metadata(const Engine& engine, const ObservationMap& map, const ServeOptions& o) {
  const auto& b = engine.bundle();
  Field m = Field::map();
  m.set("server", Field::text("ember serve"));
  m.set("policy_type", Field::text(b.module->type()));
  m.set("preset", Field::text(b.shape.preset));
  m.set("action_horizon", Field::whole(b.shape.horizon));
  m.set("denoising_steps", Field::whole(b.shape.flow_steps));
  m.set("action_dim", Field::whole(b.spec.action_dim));
  m.set("max_action_dim", Field::whole(b.shape.max_action_dim));  // the width of a request's "noise"
  m.set("state_dim", Field::whole(b.spec.state_dim));
  m.set("cameras", strings(b.spec.cameras));
  Field keys = Field::map();
  for (const auto& [key, feature] : map.keys()) keys.set(key, feature.empty() ? Field{} : Field::text(feature));
  m.set("obs_map", std::move(keys));
  m.set("required", strings(map.required()));
  m.set("max_message_bytes", Field::whole(int64_t(o.max_message_mb * (1 << 20))));
  m.set("device", Field::text(engine.device().str()));
  return m;
}

int run_serve(const ServeOptions& o) {
  check_serve_options(o);
  const at::Device device = model::resolve_device(o.device);
  check_listen_address(o.host, o.port);  // before a slow load
  auto bundle = train::load_policy(o.checkpoint, device, o.tokenizer_path.empty() ? std::nullopt : std::optional(o.tokenizer_path));
  train::use_flow_steps(bundle, o.flow_steps, device, "--policy.num_steps");
  ObservationMap map(bundle.spec, bundle.shape, o.obs_map);
  const std::string name = bundle.module->type() + "/" + bundle.shape.preset;
  Engine engine(std::move(bundle), device, {.max_batch = o.max_batch, .batch_timeout_ms = o.batch_timeout_ms, .cuda_graphs = o.cuda_graphs});
  ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  so.api_key = o.api_key;
  so.max_message_bytes = size_t(o.max_message_mb * (1 << 20));
  so.max_connections = o.max_connections;
  so.seed = o.seed;
  so.metadata = encode(serve_metadata(engine, map, o));
  install_stop_signals("\nember serve: stopping: no new connections, answering the requests in flight; send the signal again to end at once\n");
  Server server(engine, map, so);
  const bool v6 = o.host.find(':') != std::string::npos;
  std::printf("ember serve: listening on ws://%s%s%s:%d (%s on %s)\n", v6 ? "[" : "", o.host.c_str(), v6 ? "]" : "", server.port(),
              name.c_str(), device.str().c_str());
  std::fflush(stdout);
  while (!stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int sig = stop_requested();
  server.stop();
  std::printf("ember serve: stopped by %s: %lld requests answered, %lld refused, %lld connections\n", stop_signal_name(sig),
              (long long)server.answered(), (long long)server.refused(), (long long)server.connections());
  std::fflush(stdout);
  return 0;
}

}  // namespace ember::serve
