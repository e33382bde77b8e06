#include "ember/train/train_data.h"

#include <cstdio>
#include <set>

#include "ember/io/http.h"

namespace ember::train {

TrainData open_train_data(const TrainConfig& config) {
  TrainData d;
  const std::string& root = config.dataset.root;
  if (io::is_remote_url(root)) {
    data::RemoteOptions ro;
    if (config.dataset.cache_dir) ro.cache_dir = *config.dataset.cache_dir;
    ro.cache_bytes = uint64_t(config.dataset.cache_mb) << 20;
    d.remote = std::make_unique<data::RemoteShards>(root, ro);
    d.shards = d.remote->index();
    d.meta = data::load_metadata(d.remote->local_root());
  } else {
    d.meta = data::load_metadata(root);
    if (data::is_shard_root(root)) {
      d.shards = data::read_shard_index(root);
      d.local = std::make_unique<data::LocalShards>(root, *d.shards);
    }
  }
  std::string why;
  if (config.dataset.jpeg_decoder == "nvjpeg") d.nvjpeg = io::NvJpeg::open(&why);
  // only the shards' image cells are JPEG: a LeRobot dataset's PNG frames stay on the CPU
  if (io::choose_jpeg_decoder(config.dataset.jpeg_decoder, d.nvjpeg != nullptr, why) == io::JpegDecoder::kNvjpeg) {
    if (d.shards)
      std::fprintf(stderr, "[data] JPEG frames decoded by nvJPEG (%s backend, %s)\n", d.nvjpeg->backend().c_str(), d.nvjpeg->library().c_str());
    else
      std::fprintf(stderr, "[data] --dataset.jpeg_decoder=nvjpeg: %s holds no JPEG shards (ember data pack writes them): its frames are decoded on the CPU\n",
                   root.c_str());
  }
  return d;
}

void TrainData::configure(data::DatasetOptions& options) const {
  if (!shards) return;
  options.images_by_row_group = true;
  options.nvjpeg = nvjpeg.get();
  if (remote) options.localize = [r = remote.get()](const std::string& path) { return r->localize(path); };
  if (local) options.localize = [l = local.get()](const std::string& path) { return l->localize(path); };
}

void TrainData::configure(data::SamplerOptions& options, int64_t shard_window) const {
  if (!shards) return;
  options.shard_starts = shards->starts();
  options.shard_window = shard_window;
}

std::function<void(const std::vector<int64_t>&)> TrainData::lookahead() const {
  if (!remote) return {};
  return [r = remote.get()](const std::vector<int64_t>& frames) {
    std::vector<int> order;
    std::set<int> seen;
    for (int64_t f : frames) {
      int s = r->index().shard_of(f);
      if (s >= 0 && seen.insert(s).second) order.push_back(s);
    }
    r->prefetch(order);
  };
}

}  // namespace ember::train
