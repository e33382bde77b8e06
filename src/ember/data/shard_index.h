// The index of ember's training shards (docs/shards.md): meta/shards.json beside a LeRobot
// v3.0 dataset whose image cells hold JPEG bytes. It names the packing (image size, JPEG
// quality and its measured error, rows per row group) and every file with its size and CRC-32,
// each data file (a shard) also in pieces of piece_bytes with a CRC-32 each, so that a reader
// fetching a shard in ranges checks every range it gets.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ember::data {

inline constexpr const char* kShardFormat = "ember-shards";
inline constexpr int kShardVersion = 1;

struct ShardPiece {
  uint64_t offset = 0, bytes = 0;
  uint32_t crc32 = 0;
};

struct ShardFile {
  std::string path;   // relative to the root, e.g. data/chunk-000/file-000.parquet
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
  int64_t first_index = 0, rows = 0;  // data files: the global frames [first, first + rows)
  std::vector<ShardPiece> pieces;     // data files: [0, bytes) in order
};

struct ShardIndex {
  int image_size = 0;         // every camera frame is image_size x image_size
  int jpeg_quality = 0;
  int64_t rows_per_group = 0; // Parquet row group size (an episode starts a new group)
  uint64_t piece_bytes = 0;
  std::string source;         // the dataset packed
  nlohmann::json jpeg_error;  // measured on the frames packed (mean_abs_error, psnr_db, frames, bytes_per_frame)
  std::vector<ShardFile> shards;  // data files, by first_index
  std::vector<ShardFile> meta;    // meta/* files other than shards.json

  // The shard holding global frame `index` (binary search over first_index); -1 if none.
  int shard_of(int64_t index) const;
  // The first global frame of each shard, ascending.
  std::vector<int64_t> starts() const;

  nlohmann::json to_json() const;
  // Throws kCorruption naming `what` and the field.
  static ShardIndex from_json(const nlohmann::json& j, const std::string& what);
};

// Whether root holds meta/shards.json (a local path).
bool is_shard_root(const std::string& root);
// Reads ROOT/meta/shards.json; errors name the file and the field.
ShardIndex read_shard_index(const std::string& root);
// Size, CRC-32 and pieces of the file at root/rel.
ShardFile describe_file(const std::string& root, const std::string& rel, uint64_t piece_bytes);

}  // namespace ember::data
