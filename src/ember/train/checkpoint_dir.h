// The checkpoint directory of a run, crash-safe:
//
//   <output_dir>/checkpoints/000010/      one complete checkpoint (step zero-padded to 6 digits,
//   <output_dir>/checkpoints/000020/      more digits past 999999), its last file `COMPLETE`
//   <output_dir>/checkpoints/latest  ->   000020   (a relative symlink: the commit point)
//   <output_dir>/checkpoints/.tmp-30-4711/   a save in progress (or a dead one's leftovers)
//
// A save writes everything into a hidden temporary directory, fsyncs every file and directory
// in it, writes `COMPLETE` (JSON {"step": N}) and fsyncs it, renames the directory to its final
// name, fsyncs `checkpoints/`, and only then repoints `latest` (a new symlink renamed over the
// old one, then `checkpoints/` fsynced again). A process killed at any moment leaves `latest`
// pointing at a complete checkpoint (or absent, before the first save); what it was writing is a
// hidden `.tmp-*` directory that readers ignore and the next save removes.
//
// One writer per output directory (rank 0): a save removes every hidden leftover it finds.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ember::train {

// "000020": the directory name of a step's checkpoint.
std::string checkpoint_dir_name(int64_t step);

struct CheckpointRef {
  int64_t step = 0;
  std::filesystem::path dir;  // <output_dir>/checkpoints/<name>
};

class CheckpointWriter {
 public:
  // keep_last > 0 keeps only that many complete checkpoints (the newest steps, and always the
  // one `latest` points to); 0 keeps all.
  explicit CheckpointWriter(std::filesystem::path output_dir, int keep_last = 0);

  // Saves the checkpoint of `step`: calls write_files(tmp_dir) to write the files (any names but
  // `COMPLETE`; subdirectories allowed), then commits as described above, replacing an existing
  // checkpoint of the same step (atomically where the file system can exchange two directories,
  // else by two renames). Returns the final directory. If write_files throws, the temporary
  // directory is removed, nothing else changes and the exception propagates. Throws
  // ember::Error kIO naming the path if the system refuses a step.
  std::filesystem::path save(int64_t step, const std::function<void(const std::filesystem::path& tmp_dir)>& write_files);

  const std::filesystem::path& checkpoints_dir() const { return dir_; }

 private:
  void remove_leftovers();
  void point_latest_at(const std::string& name);
  void prune();

  std::filesystem::path output_dir_, dir_;
  int keep_last_;
};

// The step a checkpoint directory's name says (checkpoints/000500: 500), or -1 if its name is not
// all digits.
int64_t checkpoint_step(const std::filesystem::path& dir);

// Every file of a checkpoint, but the marker, is listed with its size and CRC-32 in
// checksums.json at save time (CheckpointWriter::save). verify_checksums(dir) rereads them and
// throws kCorruption naming a file whose bytes changed since (kNotFound for a missing one); a
// checkpoint without checksums.json (saved before ember wrote them) passes.
void write_checksums(const std::filesystem::path& dir);
void verify_checksums(const std::filesystem::path& dir);

// True if dir holds a `COMPLETE` marker naming the step its directory name says.
bool is_complete_checkpoint(const std::filesystem::path& dir);

// The complete checkpoints under <output_dir>/checkpoints, by increasing step (hidden and
// incomplete directories skipped). Empty if there are none.
std::vector<CheckpointRef> list_checkpoints(const std::filesystem::path& output_dir);

// The checkpoint to resume from: the one `latest` points to when it is complete; when `latest`
// is missing, dangling or incomplete (a save was killed between two renames on a file system
// without directory exchange, or the directory was edited by hand), the complete checkpoint of
// the highest step; nullopt if there is none.
std::optional<CheckpointRef> find_latest_checkpoint(const std::filesystem::path& output_dir);

}  // namespace ember::train
