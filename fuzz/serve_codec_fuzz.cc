// ember serve's msgpack codec (src/ember/serve/codec.h) on arbitrary frames: it refuses with an
// Error or decodes, never crashes or allocates what a header claims; what it decodes re-encodes
// and decodes to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ember/core/error.h"
#include "ember/serve/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  ember::serve::Field value;
  try {
    value = ember::serve::decode(frame);
  } catch (const ember::Error&) {
    return 0;
  }
  const std::string once = ember::serve::encode(value);
  if (ember::serve::encode(ember::serve::decode(once)) != once) std::abort();
  return 0;
}
