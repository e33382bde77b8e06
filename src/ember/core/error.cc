#include "ember/core/error.h"

namespace ember {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid argument";
    case ErrorKind::kNotFound: return "not found";
    case ErrorKind::kIO: return "I/O error";
    case ErrorKind::kCorruption: return "corrupt";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kInternal: return "internal error";
  }
  return "error";
}

}  // namespace ember
