// `ember rl`: flag parsing only; the work is in src/ember/rl/ (rl_loop.h). Fails with a clear
// error where ember was built without the simulator.
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "ember/core/error.h"

#ifdef EMBER_HAVE_SIM
#include "cli/rank.h"
#include "cli/stopped.h"
#include "ember/dist/env.h"
#include "ember/rl/rl_loop.h"
#endif

namespace ember::cli {

#ifdef EMBER_HAVE_SIM
void add_rl_command(CLI::App& app, Action& action) {
  CLI::App* r = app.add_subcommand("rl", "reinforcement learning (GRPO or PPO, flow-noise) of a policy in the simulator, sync or async");
  r->allow_extras();
  r->footer("Flags (--name=value or --name value):\n" + rl::rl_flags_help());
  r->callback([r, &action] {
    auto args = r->remaining();
    action = [args]() -> int {
      const auto c = std::make_shared<const rl::RlConfig>(rl::parse_rl_flags(args));
      // the run's last line; the exit status (128 + signal when SIGINT / SIGTERM stopped it)
      auto report = [&](const rl::RlResult& result, bool print) -> int {
        const auto& last = result.iterations.empty() ? rl::IterationStats{} : result.iterations.back();
        if (result.stopped_by) return print ? report_stopped("ember rl", result.stopped_by, last.step, result.last_checkpoint)
                                            : 128 + result.stopped_by;
        if (print)
          std::printf("ember rl: %lld steps (%s), last success %.3f, return %.3f; checkpoint %s\n", (long long)last.step,
                      c->mode.c_str(), last.learner.success, last.learner.ret, result.last_checkpoint.c_str());
        return 0;
      };
      auto env = dist::detect_dist_env();
      install_stop_signals();  // SIGINT / SIGTERM: the step under way is the last, and saved
      if (!env.is_distributed()) return report(rl::run_rl(*c), true);
      // one rank of a data-parallel job (ember launch): its own env workers, rollout and learner
      RankOptions ro;
      ro.timeout = std::chrono::milliseconds(int64_t(c->dist.timeout_s * 1000));
      ro.gpus_per_rank = c->placement == "split" ? 2 : 1;  // the collectives on the learner's GPU
      int status = 0;
      const int rc = run_rank("rl", env, c->device, ro, [&](std::shared_ptr<dist::Collectives> ranks, at::Device) {
        // on cuda:LOCAL_RANK (or the CPU); rank 0 prints
        status = report(rl::run_rl(*c, nullptr, std::move(ranks)), env.rank == 0);
      });
      return rc != 0 ? rc : status;
    };
  });
}
#else
void add_rl_command(CLI::App& app, Action& action) {
  app.add_subcommand("rl", "reinforcement learning in the simulator (not in this build)")->callback([&action] {
    action = []() -> int { fail(ErrorKind::kUnsupported, "ember rl: this ember was built without the simulator (MuJoCo)"); };
  })->allow_extras();
}
#endif

}  // namespace ember::cli
