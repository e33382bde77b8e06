// The one seam through which ember reads and writes files, so that readers can run on
// in-memory bytes (tests, fuzzing) as well as on disk.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember {

// Random-access bytes. Implementations are thread-safe for concurrent read_at calls.
class Source {
 public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at offset into out; throws Error (kCorruption naming the source)
  // if the range runs past the end, kIO if the system refuses.
  virtual void read_at(uint64_t offset, uint64_t n, uint8_t* out) const = 0;
  // A name for messages: the path, or "<memory>".
  virtual const std::string& name() const = 0;

  std::vector<uint8_t> read(uint64_t offset, uint64_t n) const;
  // The bytes [offset, offset + n) in place when the source holds them in memory (a memory
  // source, or a memory-mapped file), else nullptr; valid while the source lives. Throws like
  // read_at when the range runs past the end.
  virtual const uint8_t* view(uint64_t offset, uint64_t n) const;
};

// Opens a regular file for reading; throws kNotFound / kIO naming the path, and
// kInvalidArgument for a directory, FIFO, socket or device (never waits on one).
std::unique_ptr<Source> open_file(const std::string& path);
// Wraps bytes already in memory (copied in).
std::unique_ptr<Source> memory_source(std::vector<uint8_t> bytes, std::string name = "<memory>");
// Reads a whole regular file (errors as open_file).
std::vector<uint8_t> read_file(const std::string& path);

// Writes a file atomically: bytes go to "<path>.tmp-<pid>" and are renamed over path on
// commit(). If the object is destroyed without commit(), the temporary file is removed and
// any earlier file at path is left untouched.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  uint64_t bytes_written() const { return written_; }
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_path_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

// Writes a directory as a whole: files go into the temporary directory "<path>.tmp-<pid>"
// and commit() puts it in place of path, swapping out an earlier directory there in one
// rename (renameat2 RENAME_EXCHANGE where the file system has it) and removing that. If the
// object is destroyed without commit(), the temporary directory is removed and path is left
// untouched. Replacing a directory that holds a user's other files is the caller's decision.
class AtomicDir {
 public:
  explicit AtomicDir(std::string path);
  ~AtomicDir();
  AtomicDir(const AtomicDir&) = delete;
  AtomicDir& operator=(const AtomicDir&) = delete;

  // Where a file named `name` is written before commit().
  std::string file(const std::string& name) const { return tmp_path_ + "/" + name; }
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_path_;
  bool committed_ = false;
};

}  // namespace ember
