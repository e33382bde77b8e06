#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "ember/data/metadata.h"
#include "ember/data/shard_index.h"
#include "ember/io/json.h"
#include "ember/io/parquet/reader.h"

namespace ember::cli {

namespace {

std::string human_bytes(int64_t n) {
  char buf[32];
  if (n >= (int64_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", double(n) / double(1 << 20));
  else if (n >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", double(n) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(n));
  return buf;
}

void print_rows_json(const io::parquet::FileReader& f, int64_t head, const std::vector<std::string>& columns) {
  // one row group at a time, so memory stays bounded by the largest row group
  int64_t printed = 0;
  std::string line;
  for (int g = 0; g < f.num_row_groups() && (head < 0 || printed < head); ++g) {
    io::Table t = f.read_row_group(g, columns);
    for (int64_t r = 0; r < t.num_rows() && (head < 0 || printed < head); ++r, ++printed) {
      line = io::row_json(t, r);
      line.push_back('\n');
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
  }
}

}  // namespace

void print_parquet_summary(const std::string& path, int64_t head, const std::vector<std::string>& columns) {
  auto f = io::parquet::FileReader::open(path);
  const auto& m = f->metadata();
  std::printf("%s\n  %lld rows in %d row groups, written by %s\n", path.c_str(),
              static_cast<long long>(f->num_rows()), f->num_row_groups(),
              m.created_by.empty() ? "(unknown)" : m.created_by.c_str());
  std::printf("schema:\n");
  for (const io::Column& c : f->empty_table(columns).columns)
    std::printf("  %s: %s\n", c.name.c_str(), io::type_string(c).c_str());
  std::printf("row groups:\n");
  for (int g = 0; g < f->num_row_groups(); ++g) {
    const auto& rg = m.row_groups[size_t(g)];
    int64_t compressed = 0;
    std::string codecs, encodings;
    for (const auto& cc : rg.columns) {
      compressed += cc.meta_data.total_compressed_size;
      std::string codec = io::parquet::codec_name(cc.meta_data.codec);
      if (codecs.find(codec) == std::string::npos) codecs += (codecs.empty() ? "" : ",") + codec;
      for (auto e : cc.meta_data.encodings) {
        std::string en = io::parquet::encoding_name(e);
        if (("," + encodings + ",").find("," + en + ",") == std::string::npos) encodings += (encodings.empty() ? "" : ",") + en;
      }
    }
    std::printf("  #%d: rows %lld..%lld (%lld rows), %s compressed, %s, %s\n", g,
                static_cast<long long>(f->row_group_start(g)),
                static_cast<long long>(f->row_group_start(g) + rg.num_rows - 1), static_cast<long long>(rg.num_rows),
                human_bytes(compressed).c_str(), codecs.c_str(), encodings.c_str());
  }
  if (head != 0) {
    std::printf("rows:\n");
    std::fflush(stdout);
    print_rows_json(*f, head, columns);
  }
}

namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void print_shard_summary(const data::ShardIndex& s) {
  uint64_t bytes = 0;
  for (const auto& f : s.shards) bytes += f.bytes;
  std::printf("training shards (meta/shards.json, packed from %s):\n  %zu shards, %s; frames %dx%d JPEG quality %d, %lld rows per row group\n",
              s.source.c_str(), s.shards.size(), human_bytes(int64_t(bytes)).c_str(), s.image_size, s.image_size, s.jpeg_quality,
              static_cast<long long>(s.rows_per_group));
  if (s.jpeg_error.contains("psnr_db"))
    std::printf("  JPEG error over %lld frames: PSNR %.2f dB, mean abs error %.3f levels, %.0f bytes per frame\n",
                static_cast<long long>(s.jpeg_error["frames"].get<int64_t>()), s.jpeg_error["psnr_db"].get<double>(),
                s.jpeg_error["mean_abs_error"].get<double>(), s.jpeg_error["bytes_per_frame"].get<double>());
  for (const auto& f : s.shards)
    std::printf("  %s: frames %lld..%lld, %s, crc32 %08x\n", f.path.c_str(), static_cast<long long>(f.first_index),
                static_cast<long long>(f.first_index + f.rows - 1), human_bytes(int64_t(f.bytes)).c_str(), f.crc32);
}

}  // namespace

int print_dataset_info(const std::string& root, bool json) {
  data::Metadata m = data::load_metadata(root);
  const data::DatasetInfo& i = m.info;
  if (json) {
    nlohmann::ordered_json j;
    j["path"] = m.root;
    j["codebase_version"] = i.codebase_version;
    j["robot_type"] = i.robot_type;
    j["fps"] = i.fps;
    j["total_episodes"] = i.total_episodes;
    j["total_frames"] = i.total_frames;
    j["total_tasks"] = i.total_tasks;
    j["cameras"] = nlohmann::json::array();
    for (const data::Feature* c : i.cameras()) j["cameras"].push_back(c->key);
    j["features"] = nlohmann::ordered_json::object();
    for (const data::Feature& f : i.features) {
      nlohmann::ordered_json fj;
      fj["dtype"] = f.dtype;
      fj["shape"] = f.shape;
      if (f.is_video() && !f.video.codec.empty()) fj["codec"] = f.video.codec;
      j["features"][f.key] = fj;
    }
    if (data::is_shard_root(root)) j["shards"] = data::read_shard_index(root).to_json();
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("%s\n  LeRobot %s, robot %s, %g fps\n  %lld episodes, %lld frames, %lld tasks\n", m.root.c_str(),
              i.codebase_version.c_str(), i.robot_type.empty() ? "(unknown)" : i.robot_type.c_str(), i.fps,
              static_cast<long long>(i.total_episodes), static_cast<long long>(i.total_frames),
              static_cast<long long>(i.total_tasks));
  std::printf("cameras:\n");
  for (const data::Feature* c : i.cameras())
    std::printf("  %s: %s %s%s\n", c->key.c_str(), c->dtype.c_str(), shape_string(c->shape).c_str(),
                c->video.codec.empty() ? "" : (" " + c->video.codec).c_str());
  std::printf("features:\n");
  for (const data::Feature& f : i.features)
    if (!f.is_camera()) std::printf("  %s: %s %s\n", f.key.c_str(), f.dtype.c_str(), shape_string(f.shape).c_str());
  if (data::is_shard_root(root)) print_shard_summary(data::read_shard_index(root));
  return 0;
}

void add_data_commands(CLI::App& app, Action& action) {
  CLI::App* data = app.add_subcommand("data", "inspect and convert datasets");
  data->require_subcommand(1);

  struct ParquetArgs {
    std::string file;
    bool json = false;
    int64_t head = -1;
    std::vector<std::string> columns;
  };
  auto args = std::make_shared<ParquetArgs>();
  struct InfoArgs {
    std::string path;
    bool json = false;
  };
  auto info = std::make_shared<InfoArgs>();
  CLI::App* ic = data->add_subcommand("info", "summary of a LeRobot dataset");
  ic->add_option("PATH", info->path, "dataset root (the folder holding meta/)")->required();
  ic->add_flag("--json", info->json, "print one JSON object");
  ic->callback([info, &action] { action = [info] { return print_dataset_info(info->path, info->json); }; });

  add_dataset_commands(*data, action);
  add_shard_commands(*data, action);

  CLI::App* pq = data->add_subcommand("parquet", "print a Parquet file's schema, row groups and rows");
  pq->add_option("FILE", args->file, "Parquet file")->required();
  pq->add_flag("--json", args->json, "print only the rows, one JSON object per line");
  pq->add_option("--head", args->head, "print only the first N rows (default: all with --json, 10 otherwise)")
      ->check(CLI::NonNegativeNumber);
  pq->add_option("--columns", args->columns, "comma-separated columns to print (default: all)")->delimiter(',');
  pq->callback([args, &action] {
    action = [args] {
      if (args->json) {
        auto f = io::parquet::FileReader::open(args->file);
        print_rows_json(*f, args->head, args->columns);
      } else {
        print_parquet_summary(args->file, args->head < 0 ? 10 : args->head, args->columns);
      }
      return 0;
    };
  });
}

}  // namespace ember::cli
