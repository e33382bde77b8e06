// libFuzzer target: any bytes given to the Parquet reader must either read or raise
// ember::Error, never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ember/core/error.h"
#include "ember/io/json.h"
#include "ember/io/parquet/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  try {
    auto reader = io::parquet::FileReader::open(memory_source(std::vector<uint8_t>(data, data + size), "fuzz"));
    for (int g = 0; g < reader->num_row_groups(); ++g) {
      io::Table t = reader->read_row_group(g);
      // touch every value, as a consumer would
      std::string out;
      for (int64_t r = 0; r < t.num_rows() && r < 64; ++r) out += io::row_json(t, r);
    }
    if (reader->num_rows() > 2) reader->read_rows(1, reader->num_rows() - 1);
  } catch (const Error&) {
  }
  return 0;
}
