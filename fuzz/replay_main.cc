// Replays fuzz inputs (files or directories of files) through LLVMFuzzerTestOneInput, for
// CI machines without libFuzzer. Prints one line per directory and "N passed, 0 failed".
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  size_t n = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<fs::path> paths;
    if (fs::is_directory(argv[i])) {
      for (const auto& e : fs::directory_iterator(argv[i]))
        if (e.is_regular_file()) paths.push_back(e.path());
    } else {
      paths.push_back(argv[i]);
    }
    for (const fs::path& p : paths) {
      std::ifstream in(p, std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      ++n;
    }
    std::printf("%s: %zu inputs\n", argv[i], paths.size());
  }
  if (n == 0) {
    std::printf("no inputs found\n");
    return 1;
  }
  std::printf("%zu passed, 0 failed\n", n);
  return 0;
}
