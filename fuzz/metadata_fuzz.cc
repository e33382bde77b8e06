// libFuzzer target: the LeRobot metadata readers. The first byte of an input picks a file of
// a small dataset's meta/ folder (v2.1: info.json, episodes.jsonl, tasks.jsonl,
// episodes_stats.jsonl, stats.json; v3.0: info.json, the episodes Parquet table,
// tasks.parquet, stats.json); the rest replaces that file's bytes. Loading must either give
// metadata whose every index (episode ranges, data and video paths, task indices) is usable,
// or raise ember::Error; never crash, hang or read out of bounds.
//
// The dataset is a copy of the fixtures' meta/ folders (EMBER_FUZZ_FIXTURES, tests/fixtures),
// made once per process in a temporary directory; the seeds in fuzz/corpus_metadata/ are
// those files, each behind its selector byte (fuzz/README.md says how to make them).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/data/metadata.h"

namespace {

namespace fs = std::filesystem;

struct Target {
  const char* fixture;  // lerobot_v2_1 or lerobot_v3_0
  const char* file;     // under the dataset root
};
const Target kTargets[] = {
    {"lerobot_v2_1", "meta/info.json"},          {"lerobot_v2_1", "meta/episodes.jsonl"},
    {"lerobot_v2_1", "meta/tasks.jsonl"},        {"lerobot_v2_1", "meta/episodes_stats.jsonl"},
    {"lerobot_v2_1", "meta/stats.json"},         {"lerobot_v3_0", "meta/info.json"},
    {"lerobot_v3_0", "meta/episodes/chunk-000/file-000.parquet"},
    {"lerobot_v3_0", "meta/tasks.parquet"},      {"lerobot_v3_0", "meta/stats.json"},
};
constexpr size_t kNumTargets = sizeof(kTargets) / sizeof(kTargets[0]);

// The scratch datasets' root (one per fixture), made on first use.
const std::string& scratch() {
  // never destroyed: the exit handler that removes the directory needs the name
  static const std::string& root = *new std::string([] {
    std::string r = (fs::temp_directory_path() / ("ember_metadata_fuzz_" + std::to_string(::getpid()))).string();
    for (const char* fx : {"lerobot_v2_1", "lerobot_v3_0"}) {
      fs::create_directories(r + "/" + fx);
      fs::copy(std::string(EMBER_FUZZ_FIXTURES) + "/" + fx + "/meta", r + "/" + fx + "/meta", fs::copy_options::recursive);
    }
    std::atexit([] { std::error_code ec; fs::remove_all(scratch(), ec); });
    return r;
  }());
  return root;
}

void write(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

// Uses what loading gave, as the dataset reader and `ember data check` would.
void touch(const ember::data::Metadata& m) {
  for (const ember::data::Episode& e : m.episodes) {
    if (e.from_index < 0 || e.to_index < e.from_index || e.to_index > m.num_frames()) std::abort();
    m.data_file(e);
    for (const auto& [camera, span] : e.videos) m.video_file(e, camera);
  }
  for (int64_t k = -1; k <= int64_t(m.tasks.size()); ++k) {
    try {
      m.task(k, "fuzz");
    } catch (const ember::Error&) {
    }
  }
  if (m.num_frames() > 0) {
    const ember::data::Episode& first = m.episode_of(0);
    const ember::data::Episode& last = m.episode_of(m.num_frames() - 1);
    if (first.from_index > 0 || last.to_index != m.num_frames()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Target& t = kTargets[data[0] % kNumTargets];
  std::string root = scratch() + "/" + t.fixture, path = root + "/" + t.file;
  std::vector<uint8_t> original = ember::read_file(std::string(EMBER_FUZZ_FIXTURES) + "/" + t.fixture + "/" + t.file);
  write(path, data + 1, size - 1);
  try {
    touch(ember::data::load_metadata(root));
  } catch (const ember::Error&) {
  }
  write(path, original.data(), original.size());
  return 0;
}
