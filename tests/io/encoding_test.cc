// Parquet's value and level encodings (encoding.h): the RLE / bit-packed hybrid round trips
// at every bit width, BYTE_STREAM_SPLIT and DELTA_BINARY_PACKED decode hand-built input, and
// truncated or malformed data raises kCorruption naming its `what`.
#include "ember/io/parquet/encoding.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

#include "ember/core/error.h"
#include "parquet_test_files.h"

namespace ember::io::parquet {
namespace {

using Bytes = std::vector<uint8_t>;

template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an Error";
  return Error(ErrorKind::kInternal, "no error");
}

uint32_t max_for(int width) { return width == 32 ? 0xffffffffu : (uint32_t(1) << width) - 1; }

std::vector<uint32_t> decode_rle(const Bytes& b, int width, size_t n, const std::string& what = "rle") {
  std::vector<uint32_t> out(n);
  RleDecoder dec(b.data(), b.size(), width, &what);
  dec.decode(out.data(), n);
  return out;
}

// Values mixing random stretches (bit-packed), long runs (RLE) and short runs of 1..9.
std::vector<uint32_t> mixed_values(std::mt19937& rng, int width, size_t n) {
  std::vector<uint32_t> v;
  std::uniform_int_distribution<uint32_t> value(0, max_for(width));
  while (v.size() < n) {
    switch (rng() % 3) {
      case 0:
        for (int i = 0, k = int(rng() % 30); i < k; ++i) v.push_back(value(rng));
        break;
      case 1:
        v.insert(v.end(), 8 + rng() % 2000, value(rng));
        break;
      default:
        v.insert(v.end(), 1 + rng() % 9, value(rng));
    }
  }
  v.resize(n);
  return v;
}

TEST(BitWidth, IsTheBitsOfTheMaximum) {
  EXPECT_EQ(bit_width_for(0), 0);
  EXPECT_EQ(bit_width_for(1), 1);
  EXPECT_EQ(bit_width_for(2), 2);
  EXPECT_EQ(bit_width_for(255), 8);
  EXPECT_EQ(bit_width_for(256), 9);
  EXPECT_EQ(bit_width_for(0xffffffffu), 32);
}

TEST(Rle, RoundTripsRandomDataAtEveryBitWidth) {
  std::mt19937 rng(7);
  for (int width = 0; width <= 32; ++width) {
    for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(9), size_t(100), size_t(5000)}) {
      std::vector<uint32_t> v = mixed_values(rng, width, n);
      RleEncoder enc(width);
      for (uint32_t x : v) enc.put(x);
      Bytes b = enc.finish();
      ASSERT_EQ(decode_rle(b, width, n), v) << "width " << width << ", " << n << " values";
    }
  }
}

TEST(Rle, RoundTripsPurelyBitPackedData) {
  std::mt19937 rng(11);
  for (int width = 1; width <= 32; ++width) {
    std::vector<uint32_t> v(1003);
    for (size_t i = 0; i < v.size(); ++i) v[i] = uint32_t(rng()) & max_for(width);
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] == v[i - 1]) v[i] ^= 1;  // no runs at all (width 1 alternates)
    RleEncoder enc(width);
    for (uint32_t x : v) enc.put(x);
    Bytes b = enc.finish();
    EXPECT_EQ(b[0] & 1, 1) << "starts with a bit-packed run";
    ASSERT_EQ(decode_rle(b, width, v.size()), v) << "width " << width;
  }
}

TEST(Rle, LongRunsDecodeInPieces) {
  const size_t n = 3'000'000;
  RleEncoder enc(20);
  for (size_t i = 0; i < n; ++i) enc.put(i < n - 5 ? 0xabcde : uint32_t(i & 0xfffff));
  Bytes b = enc.finish();
  EXPECT_LT(b.size(), 32u) << "a long run encodes in a few bytes";
  const std::string what = "rle";
  RleDecoder dec(b.data(), b.size(), 20, &what);
  std::vector<uint32_t> out(1000);
  for (size_t done = 0; done < n; done += out.size()) {
    size_t k = std::min(out.size(), n - done);
    dec.decode(out.data(), k);
    for (size_t i = 0; i < k; ++i) ASSERT_EQ(out[i], done + i < n - 5 ? 0xabcdeu : uint32_t((done + i) & 0xfffff));
  }
}

TEST(Rle, DecodesIntoNarrowTypes) {
  Bytes b = testfile::rle({0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 1}, 2);
  const std::string what = "levels";
  std::vector<int16_t> levels(13);
  RleDecoder(b.data(), b.size(), 2, &what).decode(levels.data(), levels.size());
  EXPECT_EQ(levels, (std::vector<int16_t>{0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 1}));
  std::vector<uint8_t> bytes(13);
  RleDecoder(b.data(), b.size(), 2, &what).decode(bytes.data(), bytes.size());
  EXPECT_EQ(bytes[12], 1);
}

TEST(Rle, TruncatedDataRaisesCorruptionOrDecodesExactly) {
  std::mt19937 rng(3);
  for (int width : {1, 3, 8, 13, 32}) {
    std::vector<uint32_t> v = mixed_values(rng, width, 300);
    RleEncoder enc(width);
    for (uint32_t x : v) enc.put(x);
    Bytes b = enc.finish();
    for (size_t len = 0; len < b.size(); ++len) {
      Bytes prefix(b.begin(), b.begin() + ptrdiff_t(len));
      std::vector<uint32_t> out;
      try {
        out = decode_rle(prefix, width, v.size(), "cut");
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kCorruption);
        EXPECT_EQ(std::string(e.what()).rfind("cut: ", 0), 0u) << e.what();
        continue;
      }
      // only the last group's padding bits may be missing
      EXPECT_EQ(out, v) << "width " << width << ", prefix " << len << " of " << b.size();
    }
    EXPECT_EQ(error_of([&] { decode_rle({}, width, 1); }).kind(), ErrorKind::kCorruption);
  }
}

TEST(Rle, MalformedRunsRaiseCorruption) {
  const std::string what = "page";
  // an RLE run of 0 values
  Bytes empty_rle = {0x00, 0x01};
  EXPECT_EQ(error_of([&] { decode_rle(empty_rle, 1, 1); }).kind(), ErrorKind::kCorruption);
  // a bit-packed run of 0 groups
  Bytes empty_packed = {0x01, 0xff};
  EXPECT_EQ(error_of([&] { decode_rle(empty_packed, 1, 1); }).kind(), ErrorKind::kCorruption);
  // an RLE value wider than the bit width
  Bytes wide = {0x10, 0x05};  // 8 times 5 at width 2
  Error e = error_of([&] { decode_rle(wide, 2, 8); });
  EXPECT_NE(std::string(e.what()).find("wider than its bit width"), std::string::npos) << e.what();
  // an RLE value cut off
  Bytes cut = {0x10, 0x05};  // width 16 needs two value bytes
  EXPECT_EQ(error_of([&] { decode_rle(cut, 16, 8); }).kind(), ErrorKind::kCorruption);
  // a bit width over 32
  EXPECT_EQ(error_of([&] { RleDecoder(empty_rle.data(), empty_rle.size(), 33, &what); }).kind(),
            ErrorKind::kCorruption);
  // an endless varint header
  Bytes varint(12, 0xff);
  EXPECT_EQ(error_of([&] { decode_rle(varint, 1, 1); }).kind(), ErrorKind::kCorruption);
}

TEST(Rle, ARunLongerThanTheRequestIsNotAnError) {
  Bytes b = {0xc8, 0x01, 0x01};  // 100 times 1
  EXPECT_EQ(decode_rle(b, 1, 10), std::vector<uint32_t>(10, 1));
}

TEST(UnpackBits, ReadsLsbFirstAtAnyOffset) {
  Bytes b = {0b10110100, 0b00000001};
  uint32_t out[4];
  unpack_bits(b.data(), b.size(), 2, 3, out, 3);  // bits 2..10
  EXPECT_EQ(out[0], 0b101u);
  EXPECT_EQ(out[1], 0b101u);
  EXPECT_EQ(out[2], 0b001u);
}

TEST(ByteStreamSplit, DecodesFloatsAndDoubles) {
  std::vector<double> d = {1.5, -0.0, 1e300, std::numeric_limits<double>::quiet_NaN(), 3.25};
  Bytes raw = testfile::plain_f64(d), split(raw.size());
  for (size_t i = 0; i < d.size(); ++i)
    for (size_t b = 0; b < 8; ++b) split[b * d.size() + i] = raw[i * 8 + b];
  Bytes out(raw.size());
  decode_byte_stream_split(split.data(), split.size(), 8, d.size(), out.data(), "bss");
  EXPECT_EQ(out, raw);

  Bytes f = testfile::plain_f32({2.f, -1.f, 0.5f}),
        fs = {f[0], f[4], f[8], f[1], f[5], f[9], f[2], f[6], f[10], f[3], f[7], f[11]};
  Bytes fo(12);
  decode_byte_stream_split(fs.data(), fs.size(), 4, 3, fo.data(), "bss");
  EXPECT_EQ(fo, f);
}

TEST(ByteStreamSplit, TooFewBytesRaisesCorruption) {
  Bytes b(11);
  Bytes out(12);
  Error e = error_of([&] { decode_byte_stream_split(b.data(), b.size(), 4, 3, out.data(), "f.parquet: column 'x'"); });
  EXPECT_EQ(e.kind(), ErrorKind::kCorruption);
  EXPECT_NE(std::string(e.what()).find("f.parquet: column 'x'"), std::string::npos) << e.what();
}

std::vector<int64_t> decode_dbp64(const Bytes& b, size_t n, size_t* consumed = nullptr) {
  std::vector<int64_t> out(n);
  size_t c = decode_delta_binary_packed(b.data(), b.size(), 8, n, reinterpret_cast<uint8_t*>(out.data()), "dbp");
  if (consumed) *consumed = c;
  return out;
}

TEST(DeltaBinaryPacked, DecodesTheSpecificationsExamples) {
  // 1, 2, 3, 4, 5: every delta is the minimum, so the miniblocks have width 0 and no bytes
  Bytes a = {0x80, 0x01, 0x04, 0x05, 0x02, /* block */ 0x02, 0x00, 0x00, 0x00, 0x00};
  size_t used = 0;
  EXPECT_EQ(decode_dbp64(a, 5, &used), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(used, a.size());

  // 7, 5, 3, 1, 2, 3, 4, 5: deltas -2 -2 -2 1 1 1 1, minimum -2, relative 0 0 0 3 3 3 3 (2 bits)
  Bytes b = {0x80,
             0x01,
             0x04,
             0x08,
             0x0e,
             /* min delta */ 0x03,
             /* widths */ 0x02,
             0x00,
             0x00,
             0x00,
             /* 32 values of 2 bits */ 0xc0,
             0x3f,
             0,
             0,
             0,
             0,
             0,
             0};
  EXPECT_EQ(decode_dbp64(b, 8, &used), (std::vector<int64_t>{7, 5, 3, 1, 2, 3, 4, 5}));
  EXPECT_EQ(used, b.size());

  // the same data with its last miniblock cut after the bytes its values need
  Bytes c(b.begin(), b.begin() + 12);
  EXPECT_EQ(decode_dbp64(c, 8), (std::vector<int64_t>{7, 5, 3, 1, 2, 3, 4, 5}));

  // a single value: the header alone
  Bytes d = {0x80, 0x01, 0x04, 0x01, 0x7f};
  EXPECT_EQ(decode_dbp64(d, 1), std::vector<int64_t>{-64});
}

TEST(DeltaBinaryPacked, RoundTripsManyBlocksIncludingWrappingDeltas) {
  std::mt19937_64 rng(5);
  std::vector<int64_t> v64 = {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 0};
  for (int i = 0; i < 1000; ++i)
    v64.push_back(i % 100 == 0 ? int64_t(rng()) : v64.back() + int64_t(rng() % 1000) - 500);
  EXPECT_EQ(decode_dbp64(testfile::delta_binary_packed(v64), v64.size()), v64);

  std::vector<int64_t> v32 = {std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), -1};
  for (int i = 0; i < 700; ++i) v32.push_back(int32_t(uint32_t(rng())));
  Bytes b = testfile::delta_binary_packed(v32, 4);
  std::vector<int32_t> out(v32.size());
  decode_delta_binary_packed(b.data(), b.size(), 4, out.size(), reinterpret_cast<uint8_t*>(out.data()), "dbp");
  for (size_t i = 0; i < v32.size(); ++i) ASSERT_EQ(out[i], int32_t(v32[i])) << i;
}

TEST(DeltaBinaryPacked, MalformedInputRaisesCorruption) {
  auto check = [](const Bytes& b, size_t n, size_t width, const std::string& needle) {
    std::vector<uint8_t> out(n * width);
    Error e = error_of(
        [&] { decode_delta_binary_packed(b.data(), b.size(), width, n, out.data(), "f.parquet: column 'x'"); });
    EXPECT_EQ(e.kind(), ErrorKind::kCorruption);
    EXPECT_NE(std::string(e.what()).find("f.parquet: column 'x': DELTA_BINARY_PACKED"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  };
  check({0x80, 0x01, 0x04}, 1, 8, "header runs past the end");
  check({0x64, 0x04, 0x01, 0x00}, 1, 8, "block size 100");  // not a multiple of 128
  check({0x80, 0x01, 0x00, 0x01, 0x00}, 1, 8, "with 0 miniblocks");
  check({0x80, 0x01, 0x08, 0x01, 0x00}, 1, 8, "with 8 miniblocks");  // 16 values a miniblock
  check({0x80, 0x01, 0x04, 0x03, 0x00}, 5, 8, "holds 3 values, the page needs 5");
  check({0x80, 0x01, 0x04, 0x02, 0x00}, 2, 8, "block header runs past the end");
  check({0x80, 0x01, 0x04, 0x02, 0x00, 0x00, 0x41}, 2, 8, "miniblock widths run past the end");
  check({0x80, 0x01, 0x04, 0x02, 0x00, 0x00, 0x41, 0, 0, 0}, 2, 8, "bit width 65 is too wide");
  check({0x80, 0x01, 0x04, 0x02, 0x00, 0x00, 0x21, 0, 0, 0}, 2, 4, "bit width 33 is too wide");
  check({0x80, 0x01, 0x04, 0x02, 0x00, 0x00, 0x08, 0, 0, 0}, 2, 8, "miniblock runs past the end");
}

TEST(DeltaBinaryPacked, TruncatedInputRaisesCorruptionAtEveryLength) {
  std::vector<int64_t> v;
  for (int i = 0; i < 300; ++i) v.push_back(i * 37 % 101);
  Bytes b = testfile::delta_binary_packed(v);
  size_t needed = 0;
  decode_dbp64(b, v.size(), &needed);
  for (size_t len = 0; len < b.size(); ++len) {
    Bytes prefix(b.begin(), b.begin() + ptrdiff_t(len));
    try {
      EXPECT_EQ(decode_dbp64(prefix, v.size()), v) << "prefix " << len;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorruption);
    }
  }
}

}  // namespace
}  // namespace ember::io::parquet
