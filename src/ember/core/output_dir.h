// Output directories of commands that write a whole tree (evaluation, collection).
#pragma once

#include <string>

namespace ember {

// Checks that dir is absent or an empty directory; throws kInvalidArgument naming `flag`.
void check_output_dir(const std::string& dir, const std::string& flag);

// Checks that the output `out` and the input `in` are apart: neither the same directory nor one
// inside the other, after resolving links (`in` must exist; `out` need not). Throws
// kInvalidArgument naming both paths and `out_flag` otherwise, so that a command that replaces
// its output (--overwrite) never deletes or writes into its own input.
void check_output_apart(const std::string& out, const std::string& in, const std::string& out_flag);

}  // namespace ember
