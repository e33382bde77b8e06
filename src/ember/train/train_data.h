// Where a run's frames come from: a LeRobot dataset directory, ember's training shards in a
// directory (meta/shards.json), or shards at a URL (http://, https://, s3://), fetched into a
// local cache ahead of the training order (data/shard_store.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/data/sampler.h"
#include "ember/data/shard_index.h"
#include "ember/data/shard_store.h"
#include "ember/train/train_config.h"

namespace ember::train {

struct TrainData {
  data::Metadata meta;
  std::optional<data::ShardIndex> shards;      // shards, local or remote
  std::unique_ptr<data::RemoteShards> remote;  // remote shards
  std::unique_ptr<data::LocalShards> local;    // local shards (each checked once when first read)
  std::unique_ptr<io::NvJpeg> nvjpeg;          // --dataset.jpeg_decoder=nvjpeg

  // Sets what reading shards needs: images by row group, remote files fetched on demand.
  void configure(data::DatasetOptions& options) const;
  // Sets the shard-aware order (--dataset.shard_window) for shards.
  void configure(data::SamplerOptions& options, int64_t shard_window) const;
  // For remote shards: called with a rank's coming frames, fetches their shards ahead; empty
  // otherwise.
  std::function<void(const std::vector<int64_t>&)> lookahead() const;
};

// Opens --dataset.root (and fetches a remote root's metadata), and nvJPEG when
// --dataset.jpeg_decoder asks for it. Errors name the root or the flag.
TrainData open_train_data(const TrainConfig& config);

}  // namespace ember::train
