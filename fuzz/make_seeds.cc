// Writes small hand-made Parquet files into a directory, to seed the fuzzer with every page
// kind, codec, encoding and nesting the reader handles (the pyarrow fixtures are too big for
// -max_len and cover only some of them). Each file is read back before it is written.
//
//   parquet_fuzz_seeds fuzz/corpus-work
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ember/io/parquet/reader.h"
#include "parquet_test_files.h"

namespace ember::io::parquet {
namespace {

using namespace testfile;
using PT = PhysicalType;

std::vector<uint32_t> u32(std::initializer_list<uint32_t> v) { return v; }

std::vector<std::pair<std::string, Bytes>> seeds() {
  std::vector<std::pair<std::string, Bytes>> out;

  // required int32, PLAIN, v1, uncompressed
  {
    Column c = flat("x", PT::kInt32);
    c.chunks.push_back(chunk({data_page(4, plain_i32({1, -2, 3, 1 << 30}))}));
    out.push_back({"int32_plain_v1", build({.columns = {c}, .row_group_rows = {4}})});
  }
  // optional int64 with nulls, SNAPPY, two pages, two row groups
  {
    Column c = flat("x", PT::kInt64, Repetition::kOptional);
    Bytes p1 = concat({rle_prefixed(u32({1, 0, 1}), 1), plain_i64({7, -9})});
    Bytes p2 = concat({rle_prefixed(u32({0, 1}), 1), plain_i64({42})});
    Bytes p3 = concat({rle_prefixed(u32({1}), 1), plain_i64({5})});
    c.chunks.push_back(chunk({data_page(3, p1), data_page(2, p2)}, Codec::kSnappy));
    c.chunks.push_back(chunk({data_page(1, p3)}, Codec::kSnappy));
    out.push_back({"int64_nulls_snappy_2rg", build({.columns = {c}, .row_group_rows = {5, 1}})});
  }
  // double dictionary, SNAPPY, v1
  {
    Column c = flat("x", PT::kDouble, Repetition::kOptional);
    Bytes body = concat(
        {rle_prefixed(u32({1, 1, 0, 1, 1, 1, 1, 1, 1, 1}), 1), dict_indices(u32({0, 1, 2, 2, 2, 2, 2, 2, 2}), 2)});
    c.chunks.push_back(chunk(
        {dict_page(3, plain_f64({0.5, -1.25, 1e300})), data_page(10, body, Encoding::kRleDictionary)}, Codec::kSnappy));
    out.push_back({"double_dict_snappy_v1", build({.columns = {c}, .row_group_rows = {10}})});
  }
  // string dictionary, GZIP, v2
  {
    SchemaElement e = leaf_element("s", PT::kByteArray, Repetition::kOptional);
    e.converted_type = kUtf8;
    e.logical_type = kLogicalString;
    Column c;
    c.schema = {e};
    c.chunks.push_back(chunk(
        {dict_page(2, plain_bytes({"pick", "place cube"})),
         data_page_v2(4, 4, dict_indices(u32({1, 0, 1}), 1), Encoding::kRleDictionary, rle(u32({1, 1, 0, 1}), 1))},
        Codec::kGzip));
    c.chunks.back().pages.back().num_nulls = 1;
    out.push_back({"string_dict_gzip_v2", build({.columns = {c}, .row_group_rows = {4}})});
  }
  // list<float>, ZSTD, v2: [1, null], null, [], [2]
  {
    Column c = list_of("l", PT::kFloat);
    c.chunks.push_back(chunk({data_page_v2(5, 4, plain_f32({1.f, 2.f}), Encoding::kPlain, rle(u32({3, 2, 0, 1, 3}), 2),
                                           rle(u32({0, 1, 0, 0, 0}), 1))},
                             Codec::kZstd));
    out.push_back({"list_float_zstd_v2", build({.columns = {c}, .row_group_rows = {4}})});
  }
  // list<int64>, v1 levels, uncompressed
  {
    Column c = list_of("l", PT::kInt64, Repetition::kRequired);
    Bytes body =
        concat({rle_prefixed(u32({0, 1, 1, 0, 0}), 1), rle_prefixed(u32({2, 2, 2, 1, 0}), 2), plain_i64({10, 11, 12})});
    c.chunks.push_back(chunk({data_page(5, body)}));
    out.push_back({"list_int64_v1", build({.columns = {c}, .row_group_rows = {3}})});
  }
  // a bare repeated field (two-level list)
  {
    Column c = flat("r", PT::kInt32, Repetition::kRepeated);
    Bytes body = concat({rle_prefixed(u32({0, 1, 0, 0}), 1), rle_prefixed(u32({1, 1, 0, 1}), 1), plain_i32({1, 2, 3})});
    c.chunks.push_back(chunk({data_page(4, body)}));
    out.push_back({"repeated_int32", build({.columns = {c}, .row_group_rows = {3}})});
  }
  // booleans: PLAIN and RLE
  {
    Column a = flat("a", PT::kBoolean), b = flat("b", PT::kBoolean, Repetition::kOptional);
    a.chunks.push_back(chunk({data_page(9, plain_bools({true, false, true, true, false, false, false, true, true}))}));
    b.chunks.push_back(chunk({data_page(
        9, concat({rle_prefixed(u32({1, 1, 1, 1, 1, 1, 1, 1, 0}), 1), rle_prefixed(u32({1, 1, 1, 1, 1, 1, 1, 1}), 1)}),
        Encoding::kRle)}));
    out.push_back({"bool_plain_rle", build({.columns = {a, b}, .row_group_rows = {9}})});
  }
  // FIXED_LEN_BYTE_ARRAY: PLAIN and BYTE_STREAM_SPLIT; float BYTE_STREAM_SPLIT
  {
    Column a = flat("a", PT::kFixedLenByteArray), b = flat("b", PT::kFixedLenByteArray), f = flat("f", PT::kFloat);
    a.schema[0].type_length = 3;
    b.schema[0].type_length = 2;
    a.chunks.push_back(chunk({data_page(2, plain_fixed({"abc", "xyz"}))}));
    b.chunks.push_back(chunk({data_page(2, Bytes{'a', 'c', 'b', 'd'}, Encoding::kByteStreamSplit)}));
    Bytes fb = plain_f32({1.5f, -2.f});
    Bytes split = {fb[0], fb[4], fb[1], fb[5], fb[2], fb[6], fb[3], fb[7]};
    f.chunks.push_back(chunk({data_page(2, split, Encoding::kByteStreamSplit)}, Codec::kSnappy));
    out.push_back({"fixed_bss", build({.columns = {a, b, f}, .row_group_rows = {2}})});
  }
  // DELTA_BINARY_PACKED int64 and int32 (more than one block)
  {
    std::vector<int64_t> v64, v32;
    for (int i = 0; i < 300; ++i) {
      v64.push_back(int64_t(i) * i * 1000 - 77);
      v32.push_back(int32_t(i % 7 == 0 ? -i : i * 3));
    }
    Column a = flat("a", PT::kInt64), b = flat("b", PT::kInt32);
    a.chunks.push_back(chunk({data_page(300, delta_binary_packed(v64), Encoding::kDeltaBinaryPacked)}));
    b.chunks.push_back(
        chunk({data_page(300, delta_binary_packed(v32, 4), Encoding::kDeltaBinaryPacked)}, Codec::kZstd));
    out.push_back({"delta_binary_packed", build({.columns = {a, b}, .row_group_rows = {300}})});
  }
  // DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY
  {
    Column a = flat("a", PT::kByteArray), b = flat("b", PT::kByteArray);
    a.chunks.push_back(
        chunk({data_page(3, concat({delta_binary_packed({2, 0, 5}, 4), Bytes{'h', 'i', 'w', 'o', 'r', 'l', 'd'}}),
                         Encoding::kDeltaLengthByteArray)}));
    // "apple", "apply", "ape"
    b.chunks.push_back(chunk({data_page(3,
                                        concat({delta_binary_packed({0, 4, 2}, 4), delta_binary_packed({5, 1, 1}, 4),
                                                Bytes{'a', 'p', 'p', 'l', 'e', 'y', 'e'}}),
                                        Encoding::kDeltaByteArray)}));
    out.push_back({"delta_byte_arrays", build({.columns = {a, b}, .row_group_rows = {3}})});
  }
  // struct<a: int32, b: optional string>, optional: {1, "x"}, null, {2, null}
  {
    Column s;
    s.schema = {group_element("s", 2, Repetition::kOptional), leaf_element("a", PT::kInt32)};
    s.chunks.push_back(chunk({data_page(3, concat({rle_prefixed(u32({1, 0, 1}), 1), plain_i32({1, 2})}))}));
    SchemaElement b = leaf_element("b", PT::kByteArray, Repetition::kOptional);
    b.converted_type = kUtf8;
    Column::Leaf lb;
    lb.schema = {b};
    lb.chunks.push_back(chunk({data_page(3, concat({rle_prefixed(u32({2, 0, 1}), 2), plain_bytes({"x"})}))}));
    s.extra_leaves.push_back(lb);
    out.push_back({"struct_two_leaves", build({.columns = {s}, .row_group_rows = {3}})});
  }
  // integer annotations: int8 (logical), uint32 (widened), uint16 (converted)
  {
    Column a = flat("i8", PT::kInt32), b = flat("u32", PT::kInt32), c = flat("u16", PT::kInt32);
    a.schema[0].logical_type = kLogicalInteger;
    a.schema[0].int_bit_width = 8;
    b.schema[0].logical_type = kLogicalInteger;
    b.schema[0].int_bit_width = 32;
    b.schema[0].int_signed = false;
    c.schema[0].converted_type = kUint16;
    a.chunks.push_back(chunk({data_page(2, plain_i32({-128, 127}))}));
    b.chunks.push_back(chunk({data_page(2, plain_i32({-1, 5}))}));
    c.chunks.push_back(chunk({data_page(2, plain_i32({65535, 0}))}));
    out.push_back({"int_annotations", build({.columns = {a, b, c}, .row_group_rows = {2}})});
  }
  // list<struct<x: double>> with a dictionary, SNAPPY, v1
  {
    Column c;
    SchemaElement top = group_element("l", 1, Repetition::kOptional);
    top.converted_type = kList;
    c.schema = {top, group_element("list", 1, Repetition::kRepeated),
                group_element("element", 1, Repetition::kOptional),
                leaf_element("x", PT::kDouble, Repetition::kOptional)};
    // [{1.0}, null], [], [{null}]
    Bytes body =
        concat({rle_prefixed(u32({0, 1, 0, 0}), 1), rle_prefixed(u32({4, 2, 1, 3}), 3), dict_indices(u32({0}), 1)});
    c.chunks.push_back(
        chunk({dict_page(1, plain_f64({1.0})), data_page(4, body, Encoding::kPlainDictionary)}, Codec::kSnappy));
    out.push_back({"list_struct_dict", build({.columns = {c}, .row_group_rows = {3}})});
  }
  // many small pages of a long RLE run and bit-packed runs
  {
    Column c = flat("x", PT::kInt32, Repetition::kOptional);
    Chunk ch;
    ch.pages.push_back(dict_page(4, plain_i32({10, 20, 30, 40})));
    std::vector<uint32_t> idx;
    for (int i = 0; i < 40; ++i) idx.push_back(uint32_t(i < 20 ? 3 : i % 4));
    for (int p = 0; p < 3; ++p) {
      std::vector<uint32_t> def(40, 1);
      ch.pages.push_back(data_page(40, concat({rle_prefixed(def, 1), dict_indices(idx, 2)}), Encoding::kRleDictionary));
    }
    c.chunks.push_back(ch);
    out.push_back({"dict_many_pages", build({.columns = {c}, .row_group_rows = {120}})});
  }
  return out;
}

}  // namespace
}  // namespace ember::io::parquet

int main(int argc, char** argv) {
  using namespace ember;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::filesystem::create_directories(argv[1]);
  int bad = 0;
  for (const auto& [name, bytes] : io::parquet::seeds()) {
    try {
      auto r = io::parquet::FileReader::open(memory_source(bytes, name));
      io::Table t = r->read();
      std::printf("%-28s %6zu bytes, %lld rows\n", name.c_str(), bytes.size(), (long long)t.num_rows());
    } catch (const Error& e) {
      std::printf("%-28s does not read: %s\n", name.c_str(), e.what());
      ++bad;
    }
    std::ofstream(std::string(argv[1]) + "/seed_" + name + ".parquet", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  return bad == 0 ? 0 : 1;
}
