#include "ember/core/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ember/core/error.h"

namespace ember {

namespace {

std::string errno_text() { return std::strerror(errno); }

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// Reads with pread; the whole file is also mapped read-only when the system allows, so that
// readers can decode in place without copying.
class FileSource final : public Source {
 public:
  FileSource(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (p != MAP_FAILED) map_ = static_cast<const uint8_t*>(p);
    }
  }
  ~FileSource() override {
    if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
    ::close(fd_);
  }
  const uint8_t* view(uint64_t offset, uint64_t n) const override {
    check_range(offset, n);
    return map_ ? map_ + offset : nullptr;
  }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return path_; }
  void check_range(uint64_t offset, uint64_t n) const {
    if (offset > size_ || n > size_ - offset) {
      fail_corrupt(path_ + ": read of " + std::to_string(n) + " bytes at offset " +
                   std::to_string(offset) + " runs past the end of the file (" +
                   std::to_string(size_) + " bytes)");
    }
  }
  void read_at(uint64_t offset, uint64_t n, uint8_t* out) const override {
    check_range(offset, n);
    while (n > 0) {
      ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
      if (got < 0) {
        if (errno == EINTR) continue;
        fail(ErrorKind::kIO, path_ + ": read failed: " + errno_text());
      }
      if (got == 0) fail(ErrorKind::kIO, path_ + ": file shrank while reading");
      out += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<uint64_t>(got);
    }
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
  const uint8_t* map_ = nullptr;
};

class MemorySource final : public Source {
 public:
  MemorySource(std::vector<uint8_t> bytes, std::string name)
      : bytes_(std::move(bytes)), name_(std::move(name)) {}
  uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  void check_range(uint64_t offset, uint64_t n) const {
    if (offset > bytes_.size() || n > bytes_.size() - offset) {
      fail_corrupt(name_ + ": read of " + std::to_string(n) + " bytes at offset " +
                   std::to_string(offset) + " runs past the end (" +
                   std::to_string(bytes_.size()) + " bytes)");
    }
  }
  void read_at(uint64_t offset, uint64_t n, uint8_t* out) const override {
    check_range(offset, n);
    if (n > 0) std::memcpy(out, bytes_.data() + offset, n);
  }
  const uint8_t* view(uint64_t offset, uint64_t n) const override {
    check_range(offset, n);
    return bytes_.data() + offset;
  }

 private:
  std::vector<uint8_t> bytes_;
  std::string name_;
};

}  // namespace

std::vector<uint8_t> Source::read(uint64_t offset, uint64_t n) const {
  if (offset > size() || n > size() - offset) {
    fail_corrupt(name() + ": read of " + std::to_string(n) + " bytes at offset " +
                 std::to_string(offset) + " runs past the end (" + std::to_string(size()) +
                 " bytes)");
  }
  std::vector<uint8_t> out(n);
  read_at(offset, n, out.data());
  return out;
}

const uint8_t* Source::view(uint64_t offset, uint64_t n) const {
  if (offset > size() || n > size() - offset) read(offset, n);  // throws the range error
  return nullptr;
}

std::unique_ptr<Source> open_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; the
  // flag is cleared again once fstat has shown a regular file
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) fail(ErrorKind::kNotFound, path + ": no such file");
    fail(ErrorKind::kIO, path + ": cannot open: " + errno_text());
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail(ErrorKind::kIO, path + ": cannot stat: " + errno_text());
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::kInvalidArgument, path + ": is " + file_kind(st.st_mode) + ", expected a regular file");
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    ::close(fd);
    fail(ErrorKind::kIO, path + ": cannot open: " + errno_text());
  }
  return std::make_unique<FileSource>(path, fd, static_cast<uint64_t>(st.st_size));
}

std::unique_ptr<Source> memory_source(std::vector<uint8_t> bytes, std::string name) {
  return std::make_unique<MemorySource>(std::move(bytes), std::move(name));
}

std::vector<uint8_t> read_file(const std::string& path) {
  auto src = open_file(path);
  return src->read(0, src->size());
}

AtomicFile::AtomicFile(std::string path)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp-" + std::to_string(::getpid())) {
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(ErrorKind::kIO, path_ + ": cannot create: " + errno_text());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_path_.c_str());
  }
}

void AtomicFile::write(const void* data, size_t n) {
  if (fd_ < 0) fail(ErrorKind::kInternal, path_ + ": write after commit");
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t put = ::write(fd_, p, n);
    if (put < 0) {
      if (errno == EINTR) continue;
      fail(ErrorKind::kIO, path_ + ": write failed: " + errno_text());
    }
    p += put;
    n -= static_cast<size_t>(put);
    written_ += static_cast<uint64_t>(put);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) fail(ErrorKind::kInternal, path_ + ": commit twice");
  if (::fsync(fd_) != 0) fail(ErrorKind::kIO, path_ + ": fsync failed: " + errno_text());
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(tmp_path_.c_str());
    fail(ErrorKind::kIO, path_ + ": close failed: " + errno_text());
  }
  fd_ = -1;
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    ::unlink(tmp_path_.c_str());
    fail(ErrorKind::kIO, path_ + ": rename failed: " + errno_text());
  }
}

AtomicDir::AtomicDir(std::string path) : path_(std::move(path)) {
  while (path_.size() > 1 && path_.back() == '/') path_.pop_back();
  tmp_path_ = path_ + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::remove_all(tmp_path_, ec);  // left by an earlier process of this pid
  std::filesystem::create_directories(tmp_path_, ec);
  if (ec) fail(ErrorKind::kIO, path_ + ": cannot create the directory " + tmp_path_ + ": " + ec.message());
}

AtomicDir::~AtomicDir() {
  std::error_code ec;
  if (!committed_) std::filesystem::remove_all(tmp_path_, ec);
}

void AtomicDir::commit() {
  if (committed_) fail(ErrorKind::kInternal, path_ + ": commit twice");
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status old = fs::symlink_status(path_, ec);
  if (fs::exists(old) && !fs::is_directory(old))
    fail(ErrorKind::kInvalidArgument, path_ + ": exists and is not a directory");
  if (!fs::exists(old)) {
    if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) fail(ErrorKind::kIO, path_ + ": rename failed: " + errno_text());
    committed_ = true;
    return;
  }
  // swap the new directory and the old one, then remove the old one (now at tmp_path_)
  if (::renameat2(AT_FDCWD, tmp_path_.c_str(), AT_FDCWD, path_.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS) fail(ErrorKind::kIO, path_ + ": rename failed: " + errno_text());
    // no exchange on this file system: move the old one aside first
    std::string aside = path_ + ".old-" + std::to_string(::getpid());
    fs::remove_all(aside, ec);
    if (::rename(path_.c_str(), aside.c_str()) != 0) fail(ErrorKind::kIO, path_ + ": rename failed: " + errno_text());
    if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
      int err = errno;
      ::rename(aside.c_str(), path_.c_str());  // put the old one back
      fail(ErrorKind::kIO, path_ + ": rename failed: " + std::strerror(err));
    }
    fs::remove_all(aside, ec);
    committed_ = true;
    return;
  }
  committed_ = true;
  fs::remove_all(tmp_path_, ec);
}

}  // namespace ember
