// `ember launch [flags] -- PROGRAM ARGS...`: starts this node's ranks of a distributed job
// (torchrun's environment), see ember/dist/launcher.h.
#include <algorithm>
#include <memory>

#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "ember/core/error.h"
#include "ember/dist/launcher.h"

namespace ember::cli {

namespace {

struct LaunchFlags {
  dist::LaunchOptions options;
  std::vector<std::string> command;
};

int run_launch(const LaunchFlags& flags, const std::vector<std::string>& rest) {
  // CLI11 leaves "--" in the remaining arguments when it was given; anything else there is a
  // flag it did not know
  auto dashes = std::find(rest.begin(), rest.end(), "--");
  if (!flags.command.empty() && dashes == rest.end())
    fail(ErrorKind::kInvalidArgument, "missing `--` before the program (" + flags.command.front() +
                                          "): usage: ember launch [flags] -- PROGRAM [ARGS...]");
  if (rest.begin() != dashes)
    fail(ErrorKind::kInvalidArgument, "unknown flag " + rest.front() + " for ember launch (see ember launch --help)");
  dist::LaunchOptions options = flags.options;
  options.command = flags.command;
  dist::validate(options);
  // `ember launch -- ember train ...` runs this very build, whatever PATH holds
  if (options.command.front() == "ember") options.command.front() = dist::current_executable();
  const dist::LaunchResult r = dist::launch(options);
  // the ranks' own messages came before, prefixed; this line says why the job as a whole failed
  if (r.failed_rank >= 0)
    std::fprintf(stderr, "ember: error: ember launch: rank %d failed (exit status %d)%s; the job stopped\n", r.failed_rank,
                 r.failed_status, r.restarts ? (" after " + std::to_string(r.restarts) + " restart(s)").c_str() : "");
  return r.exit_status;
}

}  // namespace

void add_launch_command(CLI::App& app, Action& action) {
  auto flags = std::make_shared<LaunchFlags>();
  dist::LaunchOptions& o = flags->options;
  CLI::App* launch = app.add_subcommand(
      "launch", "start this node's ranks of a distributed job: ember launch [flags] -- PROGRAM [ARGS...]");
  launch->add_option("--nproc_per_node", o.nproc_per_node, "ranks on this node (default 1)");
  launch->add_option("--nnodes", o.nnodes, "nodes in the job (default 1)");
  launch->add_option("--node_rank", o.node_rank, "this node's index, in [0, nnodes) (default 0)");
  launch->add_option("--master_addr", o.master_addr, "address of rank 0's node (default 127.0.0.1)");
  launch->add_option("--master_port", o.master_port, "rendezvous port on the master (default 29500)");
  launch->add_option("--max_restarts", o.max_restarts, "restart all ranks this many times after a failure (default 0)");
  launch->add_option("--kill_timeout", o.kill_timeout_s,
                     "seconds between SIGTERM and SIGKILL when stopping ranks (default 10)");
  launch->add_option("command", flags->command, "the program and its arguments, after --");
  launch->allow_extras();
  launch->callback([flags, launch, &action] {
    std::vector<std::string> rest = launch->remaining();
    action = [flags, rest] { return run_launch(*flags, rest); };
  });
}

}  // namespace ember::cli
