// safetensors: round trips through bytes and files, the layout ember writes, and every kind of
// malformed file the reader must refuse (with the file and tensor named).
#include "ember/io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "test_util.h"

namespace st = ember::io::safetensors;
using st::DType;

namespace {

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

struct Sample {
  std::vector<uint8_t> f32 = bytes_of(std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, 5.0f, -6.5f});
  std::vector<uint8_t> i64 = bytes_of(std::vector<int64_t>{-1, 1LL << 40, 7});
  std::vector<uint8_t> bf16 = bytes_of(std::vector<uint16_t>{0x3f80, 0xc000});
  std::vector<uint8_t> u8 = {1, 2, 3, 4, 5};
  std::vector<uint8_t> flags = {1, 0, 1};
  std::vector<uint8_t> scalar = bytes_of(std::vector<double>{2.5});
  std::vector<st::TensorEntry> entries() const {
    return {{"weight", DType::kF32, {2, 3}, f32},   {"steps", DType::kI64, {3}, i64},
            {"half", DType::kBF16, {2}, bf16},      {"bytes", DType::kU8, {5}, u8},
            {"mask", DType::kBool, {3}, flags},     {"scale", DType::kF64, {}, scalar},
            {"nothing", DType::kF32, {0, 4}, {}}};
  }
};

std::vector<uint8_t> raw_file(const std::string& header, size_t buffer_bytes) {
  std::vector<uint8_t> out(8 + header.size() + buffer_bytes, 0);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(n >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

// Opens bytes as a file named "bad.safetensors" and returns the kCorruption message.
std::string corruption(std::vector<uint8_t> bytes) {
  try {
    st::Reader::from_source(ember::memory_source(std::move(bytes), "bad.safetensors"));
  } catch (const ember::Error& e) {
    EXPECT_EQ(e.kind(), ember::ErrorKind::kCorruption) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.safetensors"), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "opened without an error";
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(Safetensors, DTypeNamesAndSizes) {
  for (auto [d, name, size] : {std::tuple{DType::kF64, "F64", 8}, {DType::kF32, "F32", 4}, {DType::kF16, "F16", 2},
                               {DType::kBF16, "BF16", 2}, {DType::kI64, "I64", 8}, {DType::kI32, "I32", 4},
                               {DType::kI16, "I16", 2}, {DType::kI8, "I8", 1}, {DType::kU8, "U8", 1},
                               {DType::kBool, "BOOL", 1}, {DType::kF8_E4M3, "F8_E4M3", 1},
                               {DType::kF8_E5M2, "F8_E5M2", 1}, {DType::kU16, "U16", 2}, {DType::kU32, "U32", 4},
                               {DType::kU64, "U64", 8}}) {
    EXPECT_STREQ(st::dtype_name(d), name);
    EXPECT_EQ(st::dtype_size(d), size_t(size)) << name;
    EXPECT_EQ(st::parse_dtype(name), d);
  }
  EXPECT_FALSE(st::parse_dtype("F4"));
  EXPECT_FALSE(st::parse_dtype("f32"));
  EXPECT_EQ(st::num_elements(std::vector<int64_t>{}), 1);
  EXPECT_EQ(st::num_elements(std::vector<int64_t>{2, 0, 3}), 0);
  EXPECT_FALSE(st::num_elements(std::vector<int64_t>{-1}));
  EXPECT_FALSE(st::num_elements(std::vector<int64_t>{1LL << 40, 1LL << 40}));
}

TEST(Safetensors, RoundTripInMemory) {
  Sample s;
  auto entries = s.entries();
  std::vector<uint8_t> bytes = st::serialize(entries, {{"format", "pt"}, {"step", "20"}});
  st::Reader r = st::Reader::from_source(ember::memory_source(bytes, "mem"));
  EXPECT_EQ(r.metadata(), (st::Metadata{{"format", "pt"}, {"step", "20"}}));
  ASSERT_EQ(r.tensors().size(), entries.size());
  for (const st::TensorEntry& e : entries) {
    st::TensorView v = r.get(e.name);
    EXPECT_EQ(v.dtype, e.dtype) << e.name;
    EXPECT_EQ(std::vector<int64_t>(v.shape.begin(), v.shape.end()), e.shape) << e.name;
    EXPECT_EQ(std::vector<uint8_t>(v.bytes.begin(), v.bytes.end()),
              std::vector<uint8_t>(e.bytes.begin(), e.bytes.end()))
        << e.name;
  }
  EXPECT_EQ(r.get("scale").numel(), 1);
  EXPECT_EQ(r.get("nothing").numel(), 0);
  try {
    r.get("missing");
    FAIL();
  } catch (const ember::Error& e) {
    EXPECT_EQ(e.kind(), ember::ErrorKind::kNotFound);
    EXPECT_TRUE(has(e.what(), "mem") && has(e.what(), "missing")) << e.what();
  }
}

// The order documented in safetensors.h: largest element size first, then by name; the header
// padded with spaces to 8 bytes, so every tensor is aligned to its element size in the file.
TEST(Safetensors, LayoutIsAlignedAndOrdered) {
  Sample s;
  auto entries = s.entries();
  std::vector<uint8_t> bytes = st::serialize(entries);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[size_t(i)];
  EXPECT_EQ(n % 8, 0u);
  std::string header(bytes.begin() + 8, bytes.begin() + 8 + long(n));
  EXPECT_EQ(header.front(), '{');
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1).back(), '}');  // padded with spaces
  st::Reader r = st::Reader::from_source(ember::memory_source(bytes, "mem"));
  std::vector<std::string> order;
  for (const st::TensorInfo& t : r.tensors()) {
    order.push_back(t.name);
    EXPECT_EQ((r.buffer_offset() + t.begin) % st::dtype_size(t.dtype), 0u) << t.name;
  }
  // F64 and I64 (8 bytes) by name, then F32 (4), BF16 (2), BOOL and U8 (1); the empty F32 tensor
  // sits among the F32s by name
  EXPECT_EQ(order, (std::vector<std::string>{"scale", "steps", "nothing", "weight", "half", "bytes", "mask"}));
  EXPECT_EQ(header.find("\"__metadata__\""), std::string::npos);  // omitted when empty
}

TEST(Safetensors, FileRoundTripIsMappedAndAtomic) {
  ember::test::TempDir dir("ember_safetensors");
  const std::string path = dir.path() + "/model.safetensors";
  Sample s;
  st::write_file(path, s.entries(), {{"format", "pt"}});
  st::Reader r = st::Reader::open(path);
  EXPECT_EQ(r.name(), path);
  st::TensorView w = r.get("weight");
  ASSERT_EQ(w.bytes.size(), 24u);
  float values[6];
  std::memcpy(values, w.bytes.data(), sizeof values);
  EXPECT_EQ(values[2], 3.25f);
  // nothing but the file is left behind
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);

  // a failing write (a size mismatch) leaves the earlier file as it was
  std::vector<uint8_t> short_bytes = {1, 2, 3};
  std::vector<st::TensorEntry> bad = {{"x", DType::kF32, {1}, short_bytes}};
  EXPECT_THROW(st::write_file(path, bad), ember::Error);
  EXPECT_EQ(st::Reader::open(path).tensors().size(), s.entries().size());
}

TEST(Safetensors, WriterRefusesBadEntries) {
  std::vector<uint8_t> four(4);
  auto refused = [](std::vector<st::TensorEntry> entries, const std::string& part) {
    try {
      st::serialize(entries);
      ADD_FAILURE() << "accepted: " << part;
    } catch (const ember::Error& e) {
      EXPECT_EQ(e.kind(), ember::ErrorKind::kInvalidArgument);
      EXPECT_TRUE(has(e.what(), part)) << e.what();
    }
  };
  refused({{"a", DType::kF32, {2}, four}}, "needs 8");
  refused({{"a", DType::kF32, {1}, four}, {"a", DType::kF32, {1}, four}}, "duplicate");
  refused({{"__metadata__", DType::kF32, {1}, four}}, "reserved");
  refused({{"", DType::kF32, {1}, four}}, "empty name");
  refused({{"neg", DType::kU8, {-4}, four}}, "bad shape");
}

TEST(Safetensors, ReaderRefusesMalformedFiles) {
  const std::string ok_entry = R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  // sanity: the well-formed version opens
  EXPECT_NO_THROW(st::Reader::from_source(ember::memory_source(raw_file("{" + ok_entry + "}", 8), "ok")));

  EXPECT_TRUE(has(corruption({1, 2, 3}), "shorter than"));
  {
    auto b = raw_file("{}", 0);
    b[0] = 200;  // header length 200 > file
    EXPECT_TRUE(has(corruption(b), "header length 200 runs past the end"));
  }
  EXPECT_TRUE(has(corruption(raw_file("{\"t\":", 0)), "not valid JSON"));
  EXPECT_TRUE(has(corruption(raw_file("[1,2]", 0)), "not a JSON object"));
  EXPECT_TRUE(has(corruption(raw_file(R"({"t":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})", 1)),
                  "tensor 't': unknown dtype 'F4'"));
  EXPECT_TRUE(has(corruption(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8)),
                  "tensor 't': data_offsets [0, 16] run past the end"));
  EXPECT_TRUE(has(corruption(raw_file(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
                  "tensor 't': data_offsets [0, 8] hold 8 bytes, shape [3] of F32 needs 12"));
  EXPECT_TRUE(has(corruption(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)),
                  "end before begin"));
  EXPECT_TRUE(has(corruption(raw_file(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)),
                  "tensor 't': shape"));
  EXPECT_TRUE(has(corruption(raw_file(R"({"t":{"dtype":"F32","shape":[2]}})", 8)), "data_offsets"));
  EXPECT_TRUE(has(corruption(raw_file(R"({"t":{"shape":[2],"data_offsets":[0,8]}})", 8)), "missing dtype"));
  EXPECT_TRUE(has(corruption(raw_file(R"({"t":[1]})", 0)), "tensor 't': entry is not an object"));
  // overlap, gap, uncovered tail
  EXPECT_TRUE(has(corruption(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                      8)),
                  "tensor 'b' overlaps tensor 'a'"));
  EXPECT_TRUE(has(corruption(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                      12)),
                  "tensor 'b' begins at 8, leaving the bytes from 4 uncovered"));
  EXPECT_TRUE(has(corruption(raw_file("{" + ok_entry + "}", 12)), "cover 8 of the 12 data bytes"));
  EXPECT_TRUE(has(corruption(raw_file("{" + ok_entry + "," + ok_entry + "}", 8)), "repeats the key 't'"));
  EXPECT_TRUE(has(corruption(raw_file(R"({"__metadata__":{"a":1}})", 0)), "__metadata__ 'a' is not a string"));
  EXPECT_TRUE(has(corruption(raw_file(R"({"__metadata__":[1]})", 0)), "__metadata__ is not an object"));
}

// Every truncation and many single-byte corruptions of a valid file: an Error or a clean read,
// never a crash (run under the sanitizers with -DEMBER_SANITIZE=ON).
TEST(Safetensors, DamagedFilesNeverCrash) {
  Sample s;
  const std::vector<uint8_t> good = st::serialize(s.entries(), {{"k", "v"}});
  size_t opened = 0;
  for (size_t len = 0; len < good.size(); ++len) {
    try {
      st::Reader::from_source(ember::memory_source({good.begin(), good.begin() + long(len)}, "cut"));
      ++opened;
    } catch (const ember::Error&) {
    }
  }
  EXPECT_EQ(opened, 0u);  // the buffer must be covered exactly, so no prefix is valid
  for (size_t i = 0; i < good.size(); i += 3) {
    for (uint8_t x : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
      std::vector<uint8_t> b = good;
      b[i] ^= x;
      try {
        st::Reader r = st::Reader::from_source(ember::memory_source(std::move(b), "flip"));
        for (const st::TensorInfo& t : r.tensors()) EXPECT_EQ(r.get(t.name).bytes.size(), t.end - t.begin);
      } catch (const ember::Error&) {
      }
    }
  }
}
