// `ember demo`: the main job on the embedded default. Until training exists it shows the
// bundled LeRobot v3.0 fixture dataset: its summary and its Parquet tables.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "ember/core/error.h"

namespace ember::cli {

namespace {

int run_demo(const std::string& root) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(root)) fail(ErrorKind::kNotFound, root + ": demo dataset directory not found");
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ".parquet") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) fail(ErrorKind::kNotFound, root + ": no Parquet tables in the demo dataset");
  std::printf("ember demo: the bundled LeRobot v3.0 dataset\n\n");
  print_dataset_info(root, false);
  std::printf("\nits %zu Parquet tables:\n\n", files.size());
  for (const std::string& f : files) {
    print_parquet_summary(f, 3, {});
    std::printf("\n");
  }
  std::printf("ember demo: read %zu tables natively (no Arrow). Training arrives with the trainer.\n", files.size());
  return 0;
}

}  // namespace

void add_demo_command(CLI::App& app, Action& action) {
  auto root = std::make_shared<std::string>(std::string(EMBER_ASSET_DIR) + "/lerobot_v3_0");
  CLI::App* demo = app.add_subcommand("demo", "the main job on the embedded default dataset");
  demo->add_option("--dataset.root", *root, "dataset to show (default: the bundled fixture)");
  demo->callback([root, &action] { action = [root] { return run_demo(*root); }; });
}

}  // namespace ember::cli
