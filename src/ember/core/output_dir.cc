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

namespace {

// `p` with links resolved as far as it exists, then lexically normal
std::filesystem::path resolved(const std::string& p) {
  std::error_code ec;
  auto r = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
  if (ec) return std::filesystem::absolute(p).lexically_normal();
  return r.lexically_normal();
}

// whether `inner` is `outer` or lies below it (whole path components)
bool within(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  auto i = inner.begin(), o = outer.begin();
  for (; o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

}  // namespace

void check_output_apart(const std::string& out, const std::string& in, const std::string& out_flag) {
  const auto o = resolved(out), i = resolved(in);
  if (within(o, i))
    fail(ErrorKind::kInvalidArgument, out_flag + ": " + out + (o == i ? " is the input " : " lies inside the input ") + in +
                                          " (resolved: " + o.string() + "); write elsewhere");
  if (within(i, o))
    fail(ErrorKind::kInvalidArgument, out_flag + ": " + out + " holds the input " + in + " (resolved: " + i.string() +
                                          "); replacing it would delete the input");
}

}  // namespace ember
