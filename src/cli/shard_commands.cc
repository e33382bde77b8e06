// `ember data pack`: training shards from a LeRobot dataset (data/shard_pack.h, docs/shards.md).
#include <cstdio>
#include <optional>

#include "cli/commands.h"
#include "ember/core/progress.h"
#include "ember/data/shard_pack.h"

namespace ember::cli {

namespace {

int run_pack(const std::string& src, const std::string& dst, data::PackOptions o) {
  std::optional<Progress> bar;
  o.progress = [&](int64_t done, int64_t total) {
    if (!bar) bar.emplace("packing frames", total);
    bar->update(done);
  };
  data::ShardIndex index = data::pack_shards(src, dst, o);
  if (bar) bar->finish();
  uint64_t bytes = 0;
  int64_t frames = 0;
  for (const auto& s : index.shards) bytes += s.bytes, frames += s.rows;
  std::printf("%s: %lld frames in %zu shards, %.1f MiB; %dx%d JPEG at quality %d", dst.c_str(), static_cast<long long>(frames),
              index.shards.size(), double(bytes) / double(1 << 20), index.image_size, index.image_size, index.jpeg_quality);
  if (index.jpeg_error.contains("psnr_db"))
    std::printf(" (PSNR %.1f dB, mean abs error %.2f levels, %.0f bytes per frame)", index.jpeg_error["psnr_db"].get<double>(),
                index.jpeg_error["mean_abs_error"].get<double>(), index.jpeg_error["bytes_per_frame"].get<double>());
  std::printf("\n");
  return 0;
}

}  // namespace

void add_shard_commands(CLI::App& data, Action& action) {
  struct Args {
    std::string src, dst;
    data::PackOptions o;
  };
  auto a = std::make_shared<Args>();
  CLI::App* pack = data.add_subcommand("pack", "training shards: frames resized and JPEG-encoded, indexed, checksummed (docs/shards.md)");
  pack->add_option("SRC", a->src, "LeRobot dataset root (v2.1 or v3.0; video needs FFmpeg)")->required();
  pack->add_option("DST", a->dst, "shard directory to write (must not exist)")->required();
  pack->add_option("--image_size", a->o.image_size, "frames resized to N x N as the policy would (default 224)");
  pack->add_option("--jpeg_quality", a->o.jpeg_quality, "JPEG quality 1..100 (default 95, chosen by measurement: docs/shards.md)");
  pack->add_option("--shard_mb", a->o.shard_mb, "shard (data file) size in MiB (default 256)");
  pack->add_option("--rows_per_group", a->o.rows_per_group, "rows per Parquet row group (default 32)");
  pack->add_option("--threads", a->o.threads, "decode threads (default: one per core)");
  pack->add_flag("--overwrite", a->o.overwrite, "replace DST if it exists");
  pack->callback([a, &action] { action = [a] { return run_pack(a->src, a->dst, a->o); }; });
}

}  // namespace ember::cli
