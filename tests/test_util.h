// Small helpers shared by ember's tests and test tools.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ember/core/error.h"
#include "ember/data/info.h"

namespace ember::test {

// A scratch directory, removed when the object goes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "ember_test") {
    namespace fs = std::filesystem;
    path_ = (fs::temp_directory_path() /
             (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++))).string();
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  static inline int counter_ = 0;
};

// A dataset feature as info.json describes it.
inline data::Feature feature(const std::string& key, const std::string& dtype, std::vector<int64_t> shape,
                             nlohmann::json names = nullptr) {
  data::Feature f;
  f.key = key;
  f.dtype = dtype;
  f.shape = std::move(shape);
  f.names = std::move(names);
  return f;
}

// The message of the Error f throws, checking its kind; a test failure when f throws none.
template <class F>
std::string error_of(F&& f, ErrorKind kind = ErrorKind::kCorruption) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

}  // namespace ember::test
