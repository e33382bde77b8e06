// Isaac-GR00T's experiment_cfg/metadata.json: what a GR00T-N1.5 fine-tune knows of its robot,
// per embodiment tag (Isaac-GR00T's DatasetMetadata, gr00t/data/schema.py):
//
//   { "<tag>": { "statistics": { "state":  { "<part>": {max, min, mean, std, q01, q99}, ... },
//                                "action": { "<part>": {...}, ... } },
//                "modalities": { "video":  { "<camera>": {resolution [w, h], channels, fps} },
//                                "state":  { "<part>": {absolute, rotation_type, shape [n], continuous} },
//                                "action": { ... } },
//                "embodiment_tag": "<tag>" } }
//
// ember's policies see one state and one action vector: the parts are concatenated in the
// file's order (the order Isaac-GR00T's data configs list them in) and their statistics with
// them. The tag names the embodiment's heads (N1.5's EMBODIMENT_TAG_MAPPING: new_embodiment 31).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/data/metadata.h"
#include "ember/model/processor.h"

namespace ember::model {

struct GrootN15Metadata {
  std::string tag;
  int embodiment = 0;                 // the tag's projector index
  std::vector<std::string> cameras;   // observation.images.<camera>, in the file's order
  double fps = 0;                     // the first camera's
  std::vector<std::string> state_parts, action_parts;
  data::FeatureStats state, action;   // the parts' statistics concatenated (the stats all parts have)
  int64_t state_dim() const;
  int64_t action_dim() const;
};

// The projector index of an embodiment tag N1.5 names (Isaac-GR00T's EMBODIMENT_TAG_MAPPING and
// LeRobot 0.5.1's copy of it), or -1.
int groot_n15_embodiment_index(std::string_view tag);
// The tag of a projector index, or "" when N1.5 names none.
std::string groot_n15_embodiment_tag(int index);

// dir/experiment_cfg/metadata.json when it exists: the entry of its one embodiment tag, or, with
// several, of the tag whose index is `prefer` (none: nullopt, and a note lists the tags). A tag
// N1.5 does not name is left with a note. Throws Error kCorruption naming the file and field
// when the file is not the schema above (a part's statistics of different lengths, a length
// other than its modality's shape, no min / max).
std::optional<GrootN15Metadata> read_groot_n15_metadata(const std::filesystem::path& dir, std::vector<std::string>& notes,
                                                        int prefer = -1);

// Writes out/experiment_cfg/metadata.json for the spec's embodiment: one state part and one action
// part (named after the spec's keys), their statistics, its cameras at `image_size` px. Returns
// what Isaac-GR00T's loader will miss, one line each: no file (written) when the spec has no
// state and action statistics or its embodiment has no N1.5 tag; statistics of the six it reads
// (min, max, mean, std, q01, q99) that the spec lacks. Empty: a complete file.
std::vector<std::string> write_groot_n15_metadata(const std::filesystem::path& out, const FeatureSpec& spec, int image_size);

}  // namespace ember::model
