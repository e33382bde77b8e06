// Output directories of commands that write a whole tree (evaluation, collection).
#pragma once

#include <string>

namespace ember {

// Checks that dir is absent or an empty directory; throws kInvalidArgument naming `flag`.
void check_output_dir(const std::string& dir, const std::string& flag);

}  // namespace ember
