// Errors in ember are values with a kind and a message, thrown as exceptions so that deep
// parsing code stays readable. The command line catches them at the top: a user error
// (bad input file, bad flag, unsupported feature) prints one line and exits with status 2.
#pragma once

#include <stdexcept>
#include <string>

namespace ember {

enum class ErrorKind {
  kInvalidArgument,  // a bad flag or value supplied by the caller
  kNotFound,         // a missing file or key
  kIO,               // the operating system refused a read or write
  kCorruption,       // a file whose bytes do not follow its format
  kUnsupported,      // a well-formed file that uses a feature ember does not implement
  kInternal,         // a bug in ember
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  // True for errors caused by the input or the caller (exit status 2), false for bugs.
  bool is_user_error() const { return kind_ != ErrorKind::kInternal; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void fail(ErrorKind kind, const std::string& message) {
  throw Error(kind, message);
}
[[noreturn]] inline void fail_corrupt(const std::string& message) {
  throw Error(ErrorKind::kCorruption, message);
}
[[noreturn]] inline void fail_unsupported(const std::string& message) {
  throw Error(ErrorKind::kUnsupported, message);
}

}  // namespace ember
