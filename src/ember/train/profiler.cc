#include "ember/train/profiler.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <filesystem>
#include <set>

#include "ember/core/error.h"

namespace ember::train {

namespace {

namespace prof = torch::profiler::impl;

prof::ProfilerConfig config(bool shapes) { return prof::ProfilerConfig(prof::ProfilerState::KINETO, shapes); }

std::set<prof::ActivityType> activities(bool cuda) {
  std::set<prof::ActivityType> a{prof::ActivityType::CPU};
  if (cuda) a.insert(prof::ActivityType::CUDA);
  return a;
}

}  // namespace

void start_profiler(bool cuda, bool shapes) {
  torch::autograd::profiler::prepareProfiler(config(shapes), activities(cuda));
  torch::autograd::profiler::enableProfiler(config(shapes), activities(cuda));
}

void stop_profiler(const std::string& path) {
  auto result = torch::autograd::profiler::disableProfiler();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  try {
    result->save(path);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kIO, path + ": cannot write the profiler trace (" + std::string(e.what()).substr(0, 200) + ")");
  }
  if (!std::filesystem::exists(path)) throw Error(ErrorKind::kIO, path + ": the profiler wrote no trace");
}

}  // namespace ember::train
