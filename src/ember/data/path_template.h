// LeRobot's path templates (info.json `data_path`, `video_path`), Python format strings such
// as "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet".
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace ember::data {

struct TemplateArgs {
  std::map<std::string, int64_t> ints;         // e.g. chunk_index, episode_index
  std::map<std::string, std::string> strings;  // e.g. video_key
};

// Expands {name} and {name:0Nd} / {name:d}; throws kCorruption naming `what` for an unknown
// name or an unsupported format spec.
std::string format_path(const std::string& tmpl, const TemplateArgs& args, const std::string& what);

}  // namespace ember::data
