// An in-memory file (memfd) that catches a process's output in tests.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <string>

namespace ember::test {

class MemFile {
 public:
  MemFile() : fd_(::memfd_create("ember_test_output", MFD_CLOEXEC)) {}
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  int fd() const { return fd_; }
  std::string read() const {
    std::string s;
    char buf[4096];
    ssize_t n;
    for (off_t off = 0; (n = ::pread(fd_, buf, sizeof buf, off)) > 0; off += n) s.append(buf, size_t(n));
    return s;
  }

 private:
  int fd_;
};

}  // namespace ember::test
