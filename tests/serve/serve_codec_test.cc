// serve/codec.h: openpi's msgpack format both ways (byte for byte as openpi-client packs it),
// and every malformed frame refused with a message naming the key, without allocating what a
// header claims.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/serve/codec.h"
#include "test_util.h"

namespace ember::serve {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s += char(x);
  return s;
}

std::string decode_error(const std::string& frame, const DecodeLimits& limits = {}) {
  return test::error_of([&] { decode(frame, limits); }, ErrorKind::kInvalidArgument);
}

void expect_has(const std::string& text, const std::string& part) { EXPECT_NE(text.find(part), std::string::npos) << text; }

// msgpack's str / bin headers for short strings
std::string str(const std::string& s) { return char(0xa0 | s.size()) + s; }
std::string bin(const std::string& s) { return bytes({0xc4, int(s.size())}) + s; }

TEST(ServeCodec, NdarrayIsPackedByteForByteAsOpenpiClientPacksIt) {
  // msgpack_numpy.packb({"a": np.array([1, 2], dtype=np.uint8)}) with openpi-client 0.1.2
  const std::string openpi = bytes({0x81, 0xa1, 'a', 0x84}) + bin("__ndarray__") + bytes({0xc3}) + bin("data") + bin("\x01\x02") +
                             bin("dtype") + str("|u1") + bin("shape") + bytes({0x91, 0x02});
  Field m = Field::map();
  m.set("a", Field::ndarray("|u1", {2}, "\x01\x02"));
  EXPECT_EQ(encode(m), openpi);
  Field back = decode(openpi);
  const Field* a = back.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->kind, Field::Kind::kNdArray);
  EXPECT_EQ(a->dtype, "|u1");
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(a->bytes, "\x01\x02");
}

TEST(ServeCodec, NpgenericScalarsAndStrKeysAreRead) {
  // {"s": np.float32(1.5)}: openpi packs the scalar's item() (a float64) and its dtype; keys as str also read
  const std::string frame = bytes({0x81, 0xa1, 's', 0x83}) + str("__npgeneric__") + bytes({0xc3}) + str("data") +
                            bytes({0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}) + str("dtype") + str("<f4");
  Field v = decode(frame);
  const Field* s = v.find("s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->kind, Field::Kind::kFloat);
  EXPECT_EQ(s->number, 1.5);
  EXPECT_EQ(s->dtype, "<f4");
}

TEST(ServeCodec, EveryKindRoundTrips) {
  Field m = Field::map();
  m.set("nil", Field{});
  Field t;
  t.kind = Field::Kind::kBool, t.boolean = true;
  m.set("bool", t);
  Field i;
  i.kind = Field::Kind::kInt, i.integer = -123456789012;
  m.set("int", i);
  m.set("float", Field::real(0.25));
  m.set("text", Field::text("pick up the cube"));
  Field b;
  b.kind = Field::Kind::kBytes, b.bytes = std::string("\0\xff", 2);
  m.set("bytes", b);
  Field list;
  list.kind = Field::Kind::kList;
  list.items = {Field::real(1), Field::text("x")};
  m.set("list", list);
  Field inner = Field::map();
  inner.set("state", Field::ndarray("<f4", {2}, std::string(8, '\0')));
  m.set("observation", inner);
  m.set("empty", Field::ndarray("<f8", {0, 3}, ""));
  Field back = decode(encode(m));
  ASSERT_EQ(back.items.size(), m.items.size());
  EXPECT_EQ(back.find("nil")->kind, Field::Kind::kNil);
  EXPECT_TRUE(back.find("bool")->boolean);
  EXPECT_EQ(back.find("int")->integer, -123456789012);
  EXPECT_EQ(back.find("float")->number, 0.25);
  EXPECT_EQ(back.find("text")->bytes, "pick up the cube");
  EXPECT_EQ(back.find("bytes")->kind, Field::Kind::kBytes);
  EXPECT_EQ(back.find("bytes")->bytes, std::string("\0\xff", 2));
  EXPECT_EQ(back.find("list")->items.size(), 2u);
  EXPECT_EQ(back.find("observation")->find("state")->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(back.find("empty")->shape, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(encode(back), encode(m));
}

TEST(ServeCodec, DtypeSizes) {
  EXPECT_EQ(dtype_size("|u1"), 1u);
  EXPECT_EQ(dtype_size("|b1"), 1u);
  EXPECT_EQ(dtype_size("<f4"), 4u);
  EXPECT_EQ(dtype_size("<f8"), 8u);
  EXPECT_EQ(dtype_size("<i8"), 8u);
  EXPECT_EQ(dtype_size("<f2"), 2u);
  EXPECT_EQ(dtype_size("<U6"), 24u);
  EXPECT_EQ(dtype_size(">f4"), 0u);  // big-endian
  EXPECT_EQ(dtype_size("|O"), 0u);   // objects: never
  EXPECT_EQ(dtype_size("|V8"), 0u);
  EXPECT_EQ(dtype_size("<c8"), 0u);
  EXPECT_EQ(dtype_size("<f3"), 0u);
  EXPECT_EQ(dtype_size("<f4x"), 0u);
  EXPECT_EQ(dtype_size(""), 0u);
}

TEST(ServeCodec, NotMsgpackIsRefused) {
  expect_has(decode_error(""), "not msgpack");
  expect_has(decode_error("\xc1"), "not msgpack");              // a byte msgpack never uses
  expect_has(decode_error("GET / HTTP/1.1\r\n\r\n"), "not msgpack");
  expect_has(decode_error(bytes({0x81, 0xa1, 'a'})), "cut short");  // a map whose value is missing
}

TEST(ServeCodec, AFrameCutInHalfIsRefused) {
  Field m = Field::map();
  m.set("observation/state", Field::ndarray("<f4", {8}, std::string(32, '\x01')));
  const std::string whole = encode(m);
  for (size_t n : {size_t(1), whole.size() / 2, whole.size() - 1}) expect_has(decode_error(whole.substr(0, n)), "cut short");
}

TEST(ServeCodec, TrailingBytesAreRefused) { expect_has(decode_error(encode(Field::map()) + "x"), "bytes after the value"); }

TEST(ServeCodec, HeadersClaimingHugeSizesCostNothing) {
  // a map of 2^32 - 1 entries, an array of as many, a bin of 2^32 - 1 bytes: in a 5-byte frame
  expect_has(decode_error(bytes({0xdf, 0xff, 0xff, 0xff, 0xff})), "more than 4096");
  expect_has(decode_error(bytes({0xdd, 0xff, 0xff, 0xff, 0xff})), "more than 4096");
  expect_has(decode_error(bytes({0x81, 0xa1, 'k', 0xc6, 0x7f, 0xff, 0xff, 0xff})), "cut short");
}

TEST(ServeCodec, ElementAndDepthLimits) {
  DecodeLimits small;
  small.max_elements = 3;
  Field list;
  list.kind = Field::Kind::kList;
  list.items.assign(4, Field{});
  expect_has(decode_error(encode(list), small), "more than 3");
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += bytes({0x91});
  deep += bytes({0xc0});
  expect_has(decode_error(deep), "deeper than 16");
}

TEST(ServeCodec, MapKeysMustBeStringsAndUnique) {
  expect_has(decode_error(bytes({0x81, 0x01, 0xc0})), "a map key that is not a string");
  expect_has(decode_error(bytes({0x81, 0x90, 0xc0})), "a map key that is not a string");
  expect_has(decode_error(bytes({0x82, 0xa1, 'k', 0xc0, 0xa1, 'k', 0xc0})), "key 'k': the key appears twice");
}

TEST(ServeCodec, ExtensionTypesAreRefused) {
  expect_has(decode_error(bytes({0x81, 0xa1, 'k', 0xd4, 0x01, 0x00})), "key 'k': a msgpack extension type");
}

// an ndarray map under key "img" with the given entries
std::string array_frame(const std::string& entries, int n) { return bytes({0x81}) + str("img") + char(0x80 | n) + entries; }

TEST(ServeCodec, MalformedNdarraysAreRefusedNamingTheKey) {
  const std::string flag = bin("__ndarray__") + bytes({0xc3});
  const std::string dtype = bin("dtype") + str("|u1");
  const std::string shape = bin("shape") + bytes({0x92, 0x02, 0x03});
  const std::string data6 = bin("data") + bin("abcdef");
  expect_has(decode_error(array_frame(flag + dtype + shape, 3)), "key 'img': a __ndarray__ map without 'data'");
  expect_has(decode_error(array_frame(flag + data6 + shape, 3)), "key 'img': a __ndarray__ map without a 'dtype' string");
  expect_has(decode_error(array_frame(flag + data6 + dtype, 3)), "key 'img': an __ndarray__ map without a 'shape' list");
  expect_has(decode_error(array_frame(flag + data6 + dtype + shape + str("extra") + bytes({0xc0}), 5)), "unknown entry 'extra'");
  expect_has(decode_error(array_frame(bin("__ndarray__") + bytes({0xc2}) + data6 + dtype + shape, 4)), "__ndarray__ is not true");
  expect_has(decode_error(array_frame(flag + data6 + bin("dtype") + str("|O8") + shape, 4)), "dtype '|O8' is not read");
  expect_has(decode_error(array_frame(flag + data6 + bin("dtype") + str(">f4") + shape, 4)), "dtype '>f4' is not read");
  expect_has(decode_error(array_frame(flag + bin("data") + str("abcdef") + dtype + shape, 4)), "whose 'data' is not bytes");
  expect_has(decode_error(array_frame(flag + data6 + dtype + bin("shape") + bytes({0x92, 0x02, 0xff}), 4)), "sizes >= 0");
  // data length against shape x dtype: 6 bytes for [2, 4] uint8
  expect_has(decode_error(array_frame(flag + data6 + dtype + bin("shape") + bytes({0x92, 0x02, 0x04}), 4)),
             "key 'img': its data holds 6 bytes, shape [2, 4] of |u1 needs 8");
  // a shape of 2 GB with 6 bytes of data; and one whose product overflows 64 bits
  expect_has(decode_error(array_frame(flag + data6 + dtype + bin("shape") + bytes({0x91, 0xce, 0x80, 0, 0, 0}), 4)),
             "needs 2147483648");
  const std::string huge = bytes({0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  expect_has(decode_error(array_frame(flag + data6 + dtype + bin("shape") + bytes({0x93}) + huge + huge + huge, 4)), "key 'img': its data holds 6 bytes");
}

TEST(ServeCodec, NestedKeysAreNamedWithSlashes) {
  Field inner = Field::map();
  inner.set("cam_high", Field::ndarray("|u1", {1}, "x"));
  Field outer = Field::map();
  outer.set("images", inner);
  std::string frame = encode(outer);
  frame[frame.size() - 1] = char(0x05);  // the shape [1] becomes [5]: 1 byte of data for 5
  expect_has(decode_error(frame), "key 'images/cam_high': its data holds 1 bytes, shape [5]");
}

}  // namespace
}  // namespace ember::serve
