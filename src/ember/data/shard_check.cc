#include "ember/data/shard_check.h"

#include <filesystem>
#include <set>

#include "ember/core/error.h"
#include "ember/data/metadata.h"
#include "ember/data/shard_index.h"
#include "ember/io/jpeg.h"
#include "ember/io/parquet/reader.h"

namespace ember::data {

namespace fs = std::filesystem;

namespace {

// The listed file against its size and checksums; false (with a problem) when it differs.
bool check_file(const std::string& root, const ShardFile& want, uint64_t piece_bytes, CheckReport& r) {
  const std::string path = root + "/" + want.path;
  ShardFile got;
  try {
    got = describe_file(root, want.path, piece_bytes ? piece_bytes : uint64_t(4) << 20);
  } catch (const Error& e) {
    r.problems.push_back({path, e.what()});
    return false;
  }
  if (got.bytes != want.bytes) {
    r.problems.push_back({path, "holds " + std::to_string(got.bytes) + " bytes, meta/shards.json says " + std::to_string(want.bytes)});
    return false;
  }
  if (got.crc32 != want.crc32) {
    std::string where;
    for (size_t i = 0; i < want.pieces.size() && i < got.pieces.size(); ++i)
      if (want.pieces[i].crc32 != got.pieces[i].crc32) {
        where = " (first damaged piece at byte " + std::to_string(want.pieces[i].offset) + ")";
        break;
      }
    r.problems.push_back({path, "CRC-32 differs from meta/shards.json: the file is damaged" + where});
    return false;
  }
  return true;
}

// Every camera cell of the shard decodes to a JPEG of the packed size.
void decode_cells(const std::string& path, const Metadata& meta, int size, CheckReport& r) {
  std::vector<std::string> cameras;
  for (const Feature* c : meta.info.cameras()) cameras.push_back(c->key);
  auto file = io::parquet::FileReader::open(path);
  for (int g = 0; g < file->num_row_groups(); ++g) {
    io::Table t = file->read_row_group(g, cameras);
    for (const io::Column& c : t.columns) {
      const io::Column* bytes = c.type == io::TypeId::kStruct ? c.find_child("bytes") : nullptr;
      if (!bytes || bytes->type != io::TypeId::kBinary) {
        r.problems.push_back({path, "column '" + c.name + "' is not struct<bytes: binary, path: string>"});
        return;
      }
      for (int64_t i = 0; i < t.num_rows(); ++i) {
        const std::string what = path + ": column '" + c.name + "' row " + std::to_string(file->row_group_start(g) + i);
        if (!bytes->is_valid(i)) {
          r.problems.push_back({path, what + ": no image bytes"});
          continue;
        }
        std::string_view cell = bytes->str(i);
        const auto* p = reinterpret_cast<const uint8_t*>(cell.data());
        try {
          if (!io::is_jpeg(p, cell.size())) fail_corrupt(what + ": not JPEG bytes");
          io::Image im = io::decode_jpeg(p, cell.size(), what);
          if (im.width != size || im.height != size)
            fail_corrupt(what + ": a " + std::to_string(im.width) + "x" + std::to_string(im.height) + " image, the shards hold " +
                         std::to_string(size) + "x" + std::to_string(size));
          ++r.frames_decoded;
        } catch (const Error& e) {
          r.problems.push_back({path, e.what()});
        }
      }
    }
  }
}

}  // namespace

void check_shards(const std::string& root, CheckReport& r, const std::function<void(int64_t, int64_t)>& progress) {
  ShardIndex index;
  Metadata meta;
  try {
    index = read_shard_index(root);
    meta = load_metadata(root);
  } catch (const Error& e) {
    r.problems.push_back({root + "/meta/shards.json", e.what()});
    return;
  }
  // the index's data files are the episodes' data files, with the frames the episodes say
  std::set<std::string> used;
  for (const Episode& e : meta.episodes) used.insert(fs::relative(meta.data_file(e), root).string());
  std::set<std::string> listed;
  for (const ShardFile& s : index.shards) listed.insert(s.path);
  for (const std::string& u : used)
    if (!listed.count(u)) r.problems.push_back({root + "/meta/shards.json", "data file " + u + " is not listed in 'shards'"});
  for (const std::string& l : listed)
    if (!used.count(l)) r.problems.push_back({root + "/meta/shards.json", "shard " + l + " holds no episode's frames"});
  if (!index.shards.empty() && (index.shards.front().first_index != 0 ||
                                index.shards.back().first_index + index.shards.back().rows != meta.num_frames()))
    r.problems.push_back({root + "/meta/shards.json", "the shards do not cover frames 0.." + std::to_string(meta.num_frames() - 1)});

  const int64_t total = int64_t(index.meta.size() + index.shards.size());
  int64_t done = 0;
  for (const ShardFile& m : index.meta) {
    check_file(root, m, index.piece_bytes, r);
    if (progress) progress(++done, total);
  }
  for (const ShardFile& s : index.shards) {
    if (check_file(root, s, index.piece_bytes, r)) {
      try {
        decode_cells(root + "/" + s.path, meta, index.image_size, r);
      } catch (const Error& e) {
        r.problems.push_back({root + "/" + s.path, e.what()});
      }
    }
    if (progress) progress(++done, total);
  }
}

}  // namespace ember::data
