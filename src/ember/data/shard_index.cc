#include "ember/data/shard_index.h"

#include <algorithm>
#include <filesystem>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/io/checksum.h"

namespace ember::data {

int ShardIndex::shard_of(int64_t index) const {
  auto it = std::upper_bound(shards.begin(), shards.end(), index,
                             [](int64_t i, const ShardFile& s) { return i < s.first_index; });
  if (it == shards.begin()) return -1;
  --it;
  return index < it->first_index + it->rows ? int(it - shards.begin()) : -1;
}

std::vector<int64_t> ShardIndex::starts() const {
  std::vector<int64_t> out;
  for (const ShardFile& s : shards) out.push_back(s.first_index);
  return out;
}

namespace {

nlohmann::json file_json(const ShardFile& f, bool data) {
  nlohmann::json j{{"path", f.path}, {"bytes", f.bytes}, {"crc32", f.crc32}};
  if (!data) return j;
  j["first_index"] = f.first_index;
  j["rows"] = f.rows;
  nlohmann::json pieces = nlohmann::json::array();
  for (const ShardPiece& p : f.pieces) pieces.push_back({p.offset, p.bytes, p.crc32});
  j["pieces"] = pieces;
  return j;
}

template <class T>
T field(const nlohmann::json& j, const char* key, const std::string& what) {
  if (!j.is_object() || !j.contains(key)) fail_corrupt(what + ": field '" + key + "' is missing");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    fail_corrupt(what + ": field '" + key + "' has the wrong type (" + j.at(key).dump() + ")");
  }
}

// field `key` of j, which must be a JSON array
nlohmann::json array_field(const nlohmann::json& j, const char* key, const std::string& what) {
  auto a = field<nlohmann::json>(j, key, what);
  if (!a.is_array()) fail_corrupt(what + ": field '" + key + "' must be an array, got " + a.dump().substr(0, 80));
  return a;
}

// the packer's measurement: absent, or an object of numbers (frames an integer)
nlohmann::json jpeg_error_from_json(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object() || !j.contains("jpeg_error")) return nlohmann::json::object();
  const auto& e = j.at("jpeg_error");
  if (!e.is_object()) fail_corrupt(what + ": field 'jpeg_error' must be an object, got " + e.dump().substr(0, 80));
  if (e.empty()) return e;
  if (!e.contains("frames") || !e.at("frames").is_number_integer())
    fail_corrupt(what + ": field 'jpeg_error.frames' must be an integer");
  for (const char* k : {"psnr_db", "mean_abs_error", "bytes_per_frame"})
    if (!e.contains(k) || !e.at(k).is_number()) fail_corrupt(what + ": field 'jpeg_error." + k + "' must be a number");
  return e;
}

ShardFile file_from_json(const nlohmann::json& j, bool data, const std::string& what) {
  ShardFile f;
  f.path = field<std::string>(j, "path", what);
  if (f.path.empty() || f.path.front() == '/' || f.path.find("..") != std::string::npos)
    fail_corrupt(what + ": path '" + f.path + "' must be relative, inside the root");
  f.bytes = field<uint64_t>(j, "bytes", what);
  f.crc32 = field<uint32_t>(j, "crc32", what);
  if (!data) return f;
  f.first_index = field<int64_t>(j, "first_index", what);
  f.rows = field<int64_t>(j, "rows", what);
  uint64_t at = 0;
  for (const auto& p : array_field(j, "pieces", what)) {
    if (!p.is_array() || p.size() != 3 || !p[0].is_number_unsigned() || !p[1].is_number_unsigned() || !p[2].is_number_unsigned())
      fail_corrupt(what + ": a piece must be [offset, bytes, crc32], got " + p.dump());
    ShardPiece piece{p[0].get<uint64_t>(), p[1].get<uint64_t>(), p[2].get<uint32_t>()};
    if (piece.offset != at || piece.bytes == 0)
      fail_corrupt(what + ": pieces must cover the file in order; piece at " + std::to_string(piece.offset) + " expected at " +
                   std::to_string(at));
    at += piece.bytes;
    f.pieces.push_back(piece);
  }
  if (at != f.bytes) fail_corrupt(what + ": pieces cover " + std::to_string(at) + " of " + std::to_string(f.bytes) + " bytes");
  return f;
}

}  // namespace

nlohmann::json ShardIndex::to_json() const {
  nlohmann::json j;
  j["format"] = kShardFormat;
  j["version"] = kShardVersion;
  j["image_size"] = image_size;
  j["jpeg_quality"] = jpeg_quality;
  j["rows_per_group"] = rows_per_group;
  j["piece_bytes"] = piece_bytes;
  j["source"] = source;
  j["jpeg_error"] = jpeg_error;
  j["shards"] = nlohmann::json::array();
  for (const ShardFile& f : shards) j["shards"].push_back(file_json(f, true));
  j["meta"] = nlohmann::json::array();
  for (const ShardFile& f : meta) j["meta"].push_back(file_json(f, false));
  return j;
}

ShardIndex ShardIndex::from_json(const nlohmann::json& j, const std::string& what) {
  if (field<std::string>(j, "format", what) != kShardFormat) fail_corrupt(what + ": field 'format' is not \"" + kShardFormat + "\"");
  const int version = field<int>(j, "version", what);
  if (version != kShardVersion)
    fail(ErrorKind::kUnsupported, what + ": shard format version " + std::to_string(version) + ", this ember reads version " +
                                      std::to_string(kShardVersion));
  ShardIndex s;
  s.image_size = field<int>(j, "image_size", what);
  s.jpeg_quality = field<int>(j, "jpeg_quality", what);
  s.rows_per_group = field<int64_t>(j, "rows_per_group", what);
  s.piece_bytes = field<uint64_t>(j, "piece_bytes", what);
  s.source = field<std::string>(j, "source", what);
  s.jpeg_error = jpeg_error_from_json(j, what);
  const auto shards = array_field(j, "shards", what);
  for (size_t i = 0; i < shards.size(); ++i) {
    s.shards.push_back(file_from_json(shards[i], true, what + ": shards[" + std::to_string(i) + "]"));
    if (i > 0 && s.shards[i].first_index != s.shards[i - 1].first_index + s.shards[i - 1].rows)
      fail_corrupt(what + ": shards[" + std::to_string(i) + "] starts at frame " + std::to_string(s.shards[i].first_index) +
                   ", the shard before ends at " + std::to_string(s.shards[i - 1].first_index + s.shards[i - 1].rows));
  }
  const auto meta = array_field(j, "meta", what);
  for (size_t i = 0; i < meta.size(); ++i) s.meta.push_back(file_from_json(meta[i], false, what + ": meta[" + std::to_string(i) + "]"));
  return s;
}

bool is_shard_root(const std::string& root) {
  std::error_code ec;
  return std::filesystem::is_regular_file(root + "/meta/shards.json", ec);
}

ShardIndex read_shard_index(const std::string& root) {
  const std::string path = root + "/meta/shards.json";
  return ShardIndex::from_json(read_json_file(path), path);
}

ShardFile describe_file(const std::string& root, const std::string& rel, uint64_t piece_bytes) {
  auto source = open_file(root + "/" + rel);
  ShardFile f;
  f.path = rel;
  f.bytes = source->size();
  uint32_t whole = 0;
  std::vector<uint8_t> buf;
  for (uint64_t at = 0; at < f.bytes; at += piece_bytes) {
    const uint64_t n = std::min(piece_bytes, f.bytes - at);
    const uint8_t* p = source->view(at, n);
    if (!p) {
      buf.resize(n);
      source->read_at(at, n, buf.data());
      p = buf.data();
    }
    whole = io::crc32_update(whole, p, n);
    f.pieces.push_back({at, n, io::crc32_update(0, p, n)});
  }
  f.crc32 = whole;
  return f;
}

}  // namespace ember::data
