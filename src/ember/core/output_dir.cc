#include "ember/core/output_dir.h"

#include <filesystem>

#include "ember/core/error.h"

namespace ember {

void check_output_dir(const std::string& dir, const std::string& flag) {
  namespace fs = std::filesystem;
  if (dir.empty()) fail(ErrorKind::kInvalidArgument, flag + ": missing");
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) fail(ErrorKind::kInvalidArgument, flag + ": " + dir + " exists and is not a directory");
  if (!fs::is_empty(dir, ec)) fail(ErrorKind::kInvalidArgument, flag + ": " + dir + " exists and is not empty");
}

}  // namespace ember
