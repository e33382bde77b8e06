#include "ember/sim/policy.h"

#include <map>
#include <mutex>
#include <utility>

#include "ember/core/error.h"
#include "ember/sim/expert.h"

namespace ember::sim {

namespace {
std::mutex g_mu;
std::map<std::string, PolicyFactory>& registry() {
  static std::map<std::string, PolicyFactory> r = {
      {"expert", [](const PolicyArgs&) -> std::unique_ptr<Policy> { return std::make_unique<ExpertPolicy>(); }}};
  return r;
}
}  // namespace

void Policy::submit(const std::vector<PolicyInput>& inputs) {
  std::vector<ActionChunk> chunks = act(inputs);
  if (chunks.size() != inputs.size())
    fail(ErrorKind::kInternal, name() + ": act() returned " + std::to_string(chunks.size()) + " chunks for " +
                                   std::to_string(inputs.size()) + " inputs");
  for (size_t k = 0; k < inputs.size(); ++k) answered_.emplace_back(inputs[k].env, std::move(chunks[k]));
}

std::vector<std::pair<int, ActionChunk>> Policy::poll(bool wait) {
  (void)wait;  // nothing is ever pending: submit() answered
  return std::exchange(answered_, {});
}

void register_policy(const std::string& name, PolicyFactory factory) {
  std::lock_guard<std::mutex> lock(g_mu);
  registry()[name] = std::move(factory);
}

std::vector<std::string> policy_names() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string> out;
  for (const auto& [k, v] : registry()) out.push_back(k);
  return out;
}

std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyArgs& args) {
  PolicyFactory f;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = registry().find(name);
    if (it != registry().end()) f = it->second;
  }
  if (!f) {
    std::string known;
    for (const auto& k : policy_names()) known += (known.empty() ? "" : ", ") + k;
    if (name == "checkpoint")
      fail(ErrorKind::kInvalidArgument, "--checkpoint: no neural policy is built into this ember yet (policies: " +
                                            known + ")");
    fail(ErrorKind::kInvalidArgument, "--policy: unknown policy '" + name + "' (known: " + known + ")");
  }
  return f(args);
}

}  // namespace ember::sim
