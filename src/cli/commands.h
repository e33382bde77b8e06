// The `ember` command line: each file registers one group of subcommands on the CLI11 app.
// Commands only parse flags and call into the libraries.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace ember::cli {

// A command's action, run after parsing succeeds; returns the process exit status.
using Action = std::function<int()>;

void add_data_commands(CLI::App& app, Action& action);
void add_bench_commands(CLI::App& app, Action& action);
void add_demo_command(CLI::App& app, Action& action);
// `bench policy`, added to the `bench` subcommand (src/cli/bench_policy.cc).
void add_bench_policy_command(CLI::App& app, Action& action);
// `train`, `predict` and `export` (src/cli/train_commands.cc).
void add_train_commands(CLI::App& app, Action& action);
// `ember predict`'s flags.
struct PredictArgs {
  std::string checkpoint, root, device = "auto", tokenizer_path, noise, raw_out, actions_out;
  int64_t index = 0;
};
// Prints a checkpoint's predicted action chunk for a dataset frame next to the recorded one
// (and writes the raw model output to raw_out, the chunk to actions_out, when given).
int print_prediction(const PredictArgs& args);
void add_sim_commands(CLI::App& app, Action& action);  // sim collect|view, eval, bench sim
void add_launch_command(CLI::App& app, Action& action);
void add_rl_command(CLI::App& app, Action& action);  // ember rl (src/cli/rl_commands.cc)
// `ember serve` and `ember bench inference` (src/cli/serve_commands.cc; after add_bench_commands).
void add_serve_commands(CLI::App& app, Action& action);
// `data check` and `data sample`, added to the `data` subcommand.
void add_dataset_commands(CLI::App& data, Action& action);
// `data pack`, added to the `data` subcommand (src/cli/shard_commands.cc).
void add_shard_commands(CLI::App& data, Action& action);

// Prints a LeRobot dataset's summary (`ember data info`); returns the exit status.
int print_dataset_info(const std::string& root, bool json);
// Prints the schema, row-group layout and the first `head` rows of a Parquet file (text).
void print_parquet_summary(const std::string& path, int64_t head, const std::vector<std::string>& columns);

}  // namespace ember::cli
