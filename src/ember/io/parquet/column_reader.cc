#include "ember/io/parquet/column_reader.h"

#include <algorithm>
#include <cstring>

#include "ember/core/error.h"
#include "ember/io/parquet/compression.h"
#include "ember/io/parquet/encoding.h"

namespace ember::io::parquet {

namespace {

constexpr int64_t kMaxPageBytes = int64_t(1) << 30;
// Writers cap pages near 20,000 rows (pyarrow's and parquet-mr's data_page_row_count_limit);
// RLE lets a page of a few bytes claim billions of values, so ember refuses pages of more than
// 16M values (a legal but pathological file) instead of allocating for them.
constexpr int64_t kMaxPageValues = int64_t(1) << 24;

// Byte width of one value as ember stores it (before UINT_32 widening); 0 for byte arrays.
size_t stored_width(const Node& leaf) {
  switch (leaf.physical) {
    case PhysicalType::kBoolean: return 1;
    case PhysicalType::kInt32: case PhysicalType::kFloat: return 4;
    case PhysicalType::kInt64: case PhysicalType::kDouble: return 8;
    default: return 0;
  }
}

uint32_t read_u32le(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

class ChunkDecoder {
 public:
  ChunkDecoder(const Node& leaf, Codec codec, const std::string& what)
      : leaf_(leaf), codec_(codec), what_(what), width_(stored_width(leaf)) {}

  // Decodes one page; returns the number of level entries it held. A data page may hold at
  // most `entries_left` entries (what the chunk's num_values leaves for it).
  int64_t page(const PageHeader& h, const uint8_t* data, size_t size, int64_t entries_left) {
    if (h.uncompressed_page_size < 0 || h.uncompressed_page_size > kMaxPageBytes)
      corrupt("page header has uncompressed_page_size " + std::to_string(h.uncompressed_page_size));
    switch (h.type) {
      case PageType::kDictionaryPage: dictionary_page(h, data, size); return 0;
      case PageType::kDataPage: return data_page_v1(h, data, size, entries_left);
      case PageType::kDataPageV2: return data_page_v2(h, data, size, entries_left);
      case PageType::kIndexPage: return 0;
    }
    corrupt("unknown page type " + std::to_string(int(h.type)));
  }

  LeafData finish() {
    if (leaf_.widen_uint32) {
      std::vector<uint8_t> wide(size_t(out_.num_values) * 8);
      for (int64_t i = 0; i < out_.num_values; ++i) {
        int64_t v = int64_t(read_u32le(out_.values.fixed.data() + i * 4));
        std::memcpy(wide.data() + i * 8, &v, 8);
      }
      out_.values.fixed = std::move(wide);
    }
    return std::move(out_);
  }

 private:
  [[noreturn]] void corrupt(const std::string& why) const { fail_corrupt(what_ + ": " + why); }

  const uint8_t* inflate(const uint8_t* data, size_t size, size_t expected) {
    if (codec_ == Codec::kUncompressed && size == expected) return data;
    scratch_.resize(expected);
    decompress(codec_, data, size, scratch_.data(), expected, what_);
    return scratch_.data();
  }

  void dictionary_page(const PageHeader& h, const uint8_t* data, size_t size) {
    if (!h.dictionary_page) corrupt("dictionary page without a dictionary_page_header");
    const DictionaryPageHeader& d = *h.dictionary_page;
    if (d.encoding != Encoding::kPlain && d.encoding != Encoding::kPlainDictionary)
      fail_unsupported(what_ + ": dictionary page encoding " + encoding_name(d.encoding) + " is not supported");
    if (d.num_values < 0 || d.num_values > kMaxPageValues) corrupt("dictionary page has num_values " + std::to_string(d.num_values));
    const uint8_t* p = inflate(data, size, size_t(h.uncompressed_page_size));
    dict_ = DenseValues{};
    plain(p, size_t(h.uncompressed_page_size), size_t(d.num_values), dict_);
    dict_count_ = uint32_t(d.num_values);
    has_dict_ = true;
  }

  int64_t data_page_v1(const PageHeader& h, const uint8_t* data, size_t size, int64_t entries_left) {
    if (!h.data_page) corrupt("data page without a data_page_header");
    const DataPageHeader& d = *h.data_page;
    check_count(d.num_values, entries_left);
    size_t n = size_t(d.num_values);
    const uint8_t* p = inflate(data, size, size_t(h.uncompressed_page_size));
    size_t left = size_t(h.uncompressed_page_size);
    if (leaf_.max_rep > 0) levels_v1(d.repetition_level_encoding, leaf_.max_rep, p, left, n, out_.rep, "repetition");
    if (leaf_.max_def > 0) levels_v1(d.definition_level_encoding, leaf_.max_def, p, left, n, out_.def, "definition");
    values(d.encoding, p, left, non_null(n));
    out_.num_entries += int64_t(n);
    return int64_t(n);
  }

  int64_t data_page_v2(const PageHeader& h, const uint8_t* data, size_t size, int64_t entries_left) {
    if (!h.data_page_v2) corrupt("data page v2 without a data_page_header_v2");
    const DataPageHeaderV2& d = *h.data_page_v2;
    check_count(d.num_values, entries_left);
    size_t n = size_t(d.num_values);
    int64_t rl = d.repetition_levels_byte_length, dl = d.definition_levels_byte_length;
    if (rl < 0 || dl < 0 || rl + dl > int64_t(size) || rl + dl > h.uncompressed_page_size)
      corrupt("data page v2 level lengths " + std::to_string(rl) + " + " + std::to_string(dl) + " exceed the page");
    if (leaf_.max_rep > 0) levels(leaf_.max_rep, data, size_t(rl), n, out_.rep, "repetition");
    if (leaf_.max_def > 0) levels(leaf_.max_def, data + rl, size_t(dl), n, out_.def, "definition");
    const uint8_t* vdata = data + rl + dl;
    size_t vsize = size - size_t(rl + dl);
    size_t vexpected = size_t(h.uncompressed_page_size - rl - dl);
    const uint8_t* p = vdata;
    if (d.is_compressed && codec_ != Codec::kUncompressed) {
      p = inflate(vdata, vsize, vexpected);
      vsize = vexpected;
    }
    values(d.encoding, p, vsize, non_null(n));
    out_.num_entries += int64_t(n);
    return int64_t(n);
  }

  // Checked before anything is allocated for the page's values: RLE levels let a few bytes
  // stand for any number of them.
  void check_count(int32_t n, int64_t entries_left) const {
    if (n < 0) corrupt("data page has num_values " + std::to_string(n));
    if (n > entries_left)
      corrupt("data page has num_values " + std::to_string(n) + ", more than the " + std::to_string(entries_left) +
              " the column chunk's num_values leaves for it");
    if (n > kMaxPageValues)
      fail_unsupported(what_ + ": data page has " + std::to_string(n) + " values; ember reads at most " +
                       std::to_string(kMaxPageValues) + " values per page (writers use about 20,000)");
  }

  void levels_v1(Encoding enc, int16_t max_level, const uint8_t*& p, size_t& left, size_t n,
                 Levels& out, const char* kind) {
    if (enc != Encoding::kRle)
      fail_unsupported(what_ + ": " + kind + " level encoding " + encoding_name(enc) + " is not supported (only RLE)");
    if (left < 4) corrupt(std::string(kind) + " levels: page too short for the length prefix");
    uint32_t len = read_u32le(p);
    if (len > left - 4) corrupt(std::string(kind) + " levels of " + std::to_string(len) + " bytes run past the page");
    levels(max_level, p + 4, len, n, out, kind);
    p += 4 + len;
    left -= 4 + len;
  }

  void levels(int16_t max_level, const uint8_t* p, size_t len, size_t n, Levels& out, const char* kind) {
    std::string what = what_ + ": " + kind + " levels";
    RleDecoder dec(p, len, bit_width_for(uint32_t(max_level)), &what);
    size_t at = out.size();
    out.resize(at + n);
    dec.decode(out.data() + at, n);
    // a level over the maximum is only possible when the bit width can hold more than it
    const int bw = bit_width_for(uint32_t(max_level));
    if ((1 << bw) - 1 == max_level) return;
    for (size_t i = at; i < at + n; ++i)
      if (out[i] > max_level) corrupt(std::string(kind) + " level " + std::to_string(out[i]) + " is over the maximum " + std::to_string(max_level));
  }

  size_t non_null(size_t n) const {
    if (leaf_.max_def == 0) return n;
    const int16_t* d = out_.def.data() + out_.def.size() - n;
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) k += d[i] == leaf_.max_def;
    return k;
  }

  // Appends n values encoded with `enc` to out_.
  void values(Encoding enc, const uint8_t* p, size_t size, size_t n) {
    switch (enc) {
      case Encoding::kPlain: plain(p, size, n, out_.values); break;
      case Encoding::kPlainDictionary:
      case Encoding::kRleDictionary: dictionary_indices(p, size, n); break;
      case Encoding::kRle: rle_booleans(p, size, n); break;
      case Encoding::kByteStreamSplit: byte_stream_split(p, size, n); break;
      case Encoding::kDeltaBinaryPacked: delta_binary_packed(p, size, n); break;
      case Encoding::kDeltaLengthByteArray: delta_length_byte_array(p, size, n); break;
      case Encoding::kDeltaByteArray: delta_byte_array(p, size, n); break;
      default:
        fail_unsupported(what_ + ": value encoding " + encoding_name(enc) + " (" + std::to_string(int(enc)) +
                         ") is not supported for " + physical_type_name(leaf_.physical));
    }
    out_.num_values += int64_t(n);
  }

  void plain(const uint8_t* p, size_t size, size_t n, DenseValues& v) {
    switch (leaf_.physical) {
      case PhysicalType::kBoolean: {
        if (size < (n + 7) / 8) corrupt("PLAIN booleans run past the page");
        size_t at = v.fixed.size();
        v.fixed.resize(at + n);
        for (size_t i = 0; i < n; ++i) v.fixed[at + i] = (p[i >> 3] >> (i & 7)) & 1;
        break;
      }
      case PhysicalType::kInt32: case PhysicalType::kFloat:
      case PhysicalType::kInt64: case PhysicalType::kDouble: {
        size_t bytes = n * width_;
        if (size < bytes) corrupt("PLAIN values need " + std::to_string(bytes) + " bytes, the page has " + std::to_string(size));
        v.fixed.insert(v.fixed.end(), p, p + bytes);
        break;
      }
      case PhysicalType::kByteArray: {
        size_t pos = 0;
        v.offsets.reserve(v.offsets.size() + n);
        for (size_t i = 0; i < n; ++i) {
          if (size - pos < 4) corrupt("PLAIN byte array length runs past the page");
          uint32_t len = read_u32le(p + pos);
          pos += 4;
          if (len > size - pos) corrupt("PLAIN byte array of " + std::to_string(len) + " bytes runs past the page");
          v.bytes.insert(v.bytes.end(), p + pos, p + pos + len);
          pos += len;
          v.offsets.push_back(int64_t(v.bytes.size()));
        }
        break;
      }
      case PhysicalType::kFixedLenByteArray: {
        size_t w = size_t(leaf_.type_length);
        if (n > 0 && size / n < w) corrupt("PLAIN fixed-length byte arrays run past the page");
        for (size_t i = 0; i < n; ++i) {
          v.bytes.insert(v.bytes.end(), p + i * w, p + (i + 1) * w);
          v.offsets.push_back(int64_t(v.bytes.size()));
        }
        break;
      }
      case PhysicalType::kInt96:
        fail_unsupported(what_ + ": INT96 is not supported");
    }
  }

  void dictionary_indices(const uint8_t* p, size_t size, size_t n) {
    if (!has_dict_) corrupt("dictionary-encoded page but the chunk has no dictionary page");
    if (n == 0) return;
    if (size < 1) corrupt("dictionary indices: page has no bit width byte");
    if (dict_count_ == 0) corrupt("dictionary-encoded page but the dictionary page holds no values");
    std::string what = what_ + ": dictionary indices";
    RleDecoder dec(p + 1, size - 1, p[0], &what);
    idx_.resize(n);
    dec.decode(idx_.data(), n);
    uint32_t dict_size = dict_count_;
    for (size_t i = 0; i < n; ++i)
      if (idx_[i] >= dict_size)
        corrupt("dictionary index " + std::to_string(idx_[i]) + " is out of range (dictionary has " +
                std::to_string(dict_size) + " entries)");
    if (width_ > 0) {
      size_t at = out_.values.fixed.size();
      out_.values.fixed.resize(at + n * width_);
      uint8_t* dst = out_.values.fixed.data() + at;
      const uint8_t* src = dict_.fixed.data();
      if (width_ == 4) {
        for (size_t i = 0; i < n; ++i) std::memcpy(dst + i * 4, src + size_t(idx_[i]) * 4, 4);
      } else if (width_ == 8) {
        for (size_t i = 0; i < n; ++i) std::memcpy(dst + i * 8, src + size_t(idx_[i]) * 8, 8);
      } else {
        for (size_t i = 0; i < n; ++i) std::memcpy(dst + i * width_, src + size_t(idx_[i]) * width_, width_);
      }
    } else {
      out_.values.offsets.reserve(out_.values.offsets.size() + n);
      for (size_t i = 0; i < n; ++i) {
        int64_t b = dict_.offsets[idx_[i]], e = dict_.offsets[idx_[i] + 1];
        out_.values.bytes.insert(out_.values.bytes.end(), dict_.bytes.begin() + b, dict_.bytes.begin() + e);
        out_.values.offsets.push_back(int64_t(out_.values.bytes.size()));
      }
    }
  }

  void rle_booleans(const uint8_t* p, size_t size, size_t n) {
    if (leaf_.physical != PhysicalType::kBoolean)
      fail_unsupported(what_ + ": RLE value encoding is only supported for BOOLEAN, not " + physical_type_name(leaf_.physical));
    if (size < 4) corrupt("RLE booleans: page too short for the length prefix");
    uint32_t len = read_u32le(p);
    if (len > size - 4) corrupt("RLE booleans of " + std::to_string(len) + " bytes run past the page");
    std::string what = what_ + ": RLE booleans";
    RleDecoder dec(p + 4, len, 1, &what);
    size_t at = out_.values.fixed.size();
    out_.values.fixed.resize(at + n);
    dec.decode(out_.values.fixed.data() + at, n);
  }

  void byte_stream_split(const uint8_t* p, size_t size, size_t n) {
    size_t w = width_ > 0 ? width_ : (leaf_.physical == PhysicalType::kFixedLenByteArray ? size_t(leaf_.type_length) : 0);
    if (w == 0 || leaf_.physical == PhysicalType::kBoolean)
      fail_unsupported(what_ + ": BYTE_STREAM_SPLIT is not supported for " + std::string(physical_type_name(leaf_.physical)));
    if (n > 0 && size / n < w) corrupt("BYTE_STREAM_SPLIT data runs past the page");
    if (width_ > 0) {
      size_t at = out_.values.fixed.size();
      out_.values.fixed.resize(at + n * w);
      decode_byte_stream_split(p, n * w, w, n, out_.values.fixed.data() + at, what_);
    } else {
      size_t at = out_.values.bytes.size();
      out_.values.bytes.resize(at + n * w);
      decode_byte_stream_split(p, n * w, w, n, out_.values.bytes.data() + at, what_);
      for (size_t i = 0; i < n; ++i) out_.values.offsets.push_back(int64_t(at + (i + 1) * w));
    }
  }

  void delta_binary_packed(const uint8_t* p, size_t size, size_t n) {
    if (leaf_.physical != PhysicalType::kInt32 && leaf_.physical != PhysicalType::kInt64)
      fail_unsupported(what_ + ": DELTA_BINARY_PACKED is not supported for " + std::string(physical_type_name(leaf_.physical)));
    check_delta_binary_packed_count(p, size, n, what_);
    size_t at = out_.values.fixed.size();
    out_.values.fixed.resize(at + n * width_);
    decode_delta_binary_packed(p, size, width_, n, out_.values.fixed.data() + at, what_);
  }

  // Lengths (DELTA_BINARY_PACKED int32) followed by the concatenated bytes.
  size_t delta_lengths(const uint8_t* p, size_t size, size_t n, std::vector<int32_t>& lens) {
    check_delta_binary_packed_count(p, size, n, what_);
    lens.resize(n);
    return decode_delta_binary_packed(p, size, 4, n, reinterpret_cast<uint8_t*>(lens.data()), what_);
  }

  void delta_length_byte_array(const uint8_t* p, size_t size, size_t n) {
    if (leaf_.physical != PhysicalType::kByteArray)
      fail_unsupported(what_ + ": DELTA_LENGTH_BYTE_ARRAY is not supported for " + std::string(physical_type_name(leaf_.physical)));
    std::vector<int32_t> lens;
    size_t pos = delta_lengths(p, size, n, lens);
    for (size_t i = 0; i < n; ++i) {
      if (lens[i] < 0 || size_t(lens[i]) > size - pos) corrupt("DELTA_LENGTH_BYTE_ARRAY value runs past the page");
      out_.values.bytes.insert(out_.values.bytes.end(), p + pos, p + pos + lens[i]);
      pos += size_t(lens[i]);
      out_.values.offsets.push_back(int64_t(out_.values.bytes.size()));
    }
  }

  void delta_byte_array(const uint8_t* p, size_t size, size_t n) {
    if (leaf_.physical != PhysicalType::kByteArray && leaf_.physical != PhysicalType::kFixedLenByteArray)
      fail_unsupported(what_ + ": DELTA_BYTE_ARRAY is not supported for " + std::string(physical_type_name(leaf_.physical)));
    std::vector<int32_t> prefix, suffix;
    size_t pos = delta_lengths(p, size, n, prefix);
    pos += delta_lengths(p + pos, size - pos, n, suffix);
    std::string prev;
    for (size_t i = 0; i < n; ++i) {
      if (prefix[i] < 0 || size_t(prefix[i]) > prev.size()) corrupt("DELTA_BYTE_ARRAY prefix longer than the previous value");
      if (suffix[i] < 0 || size_t(suffix[i]) > size - pos) corrupt("DELTA_BYTE_ARRAY suffix runs past the page");
      prev.resize(size_t(prefix[i]));
      prev.append(reinterpret_cast<const char*>(p + pos), size_t(suffix[i]));
      pos += size_t(suffix[i]);
      out_.values.bytes.insert(out_.values.bytes.end(), prev.begin(), prev.end());
      out_.values.offsets.push_back(int64_t(out_.values.bytes.size()));
    }
  }

  const Node& leaf_;
  Codec codec_;
  const std::string& what_;
  size_t width_;
  LeafData out_;
  DenseValues dict_;
  uint32_t dict_count_ = 0;
  bool has_dict_ = false;
  std::vector<uint8_t> scratch_;
  std::vector<uint32_t> idx_;
};

}  // namespace

LeafData read_column_chunk(const Source& source, const ColumnChunk& chunk, const Node& leaf, int64_t num_rows,
                           const std::string& what) {
  if (!chunk.file_path.empty())
    fail_unsupported(what + ": column chunk stored in another file (" + chunk.file_path + ")");
  if (!chunk.has_meta_data) fail_corrupt(what + ": column chunk has no meta_data");
  const ColumnMetaData& m = chunk.meta_data;
  if (m.type != leaf.physical)
    fail_corrupt(what + ": column chunk has physical type " + physical_type_name(m.type) + ", the schema says " +
                 physical_type_name(leaf.physical));
  int64_t start = m.data_page_offset;
  if (m.dictionary_page_offset && *m.dictionary_page_offset > 0 && *m.dictionary_page_offset < start)
    start = *m.dictionary_page_offset;
  int64_t len = m.total_compressed_size;
  if (start < 0 || len < 0 || uint64_t(start) > source.size() || uint64_t(len) > source.size() - uint64_t(start))
    fail_corrupt(what + ": column chunk at offset " + std::to_string(start) + " of " + std::to_string(len) +
                 " bytes lies outside the file (" + std::to_string(source.size()) + " bytes)");
  if (m.num_values < 0) fail_corrupt(what + ": column chunk has num_values " + std::to_string(m.num_values));
  // RLE lets a few bytes stand for any number of values; a chunk may claim at most 16M
  // values plus 64 per byte of the file, which no real file comes near, so that a tiny file
  // cannot make the reader allocate gigabytes
  const uint64_t max_values = (uint64_t(1) << 24) + 64 * source.size();
  if (uint64_t(m.num_values) > max_values)
    fail_unsupported(what + ": column chunk claims " + std::to_string(m.num_values) + " values in a file of " +
                     std::to_string(source.size()) + " bytes; ember reads at most " + std::to_string(max_values) +
                     " values per chunk of such a file");
  // a leaf outside any list has one level entry per row
  if (leaf.max_rep == 0 && m.num_values != num_rows)
    fail_corrupt(what + ": column chunk has num_values " + std::to_string(m.num_values) + ", the row group has " +
                 std::to_string(num_rows) + " rows");
  // decode in place from a mapped file; otherwise read the chunk once
  std::vector<uint8_t> copy;
  const uint8_t* data = source.view(uint64_t(start), uint64_t(len));
  if (!data) {
    copy = source.read(uint64_t(start), uint64_t(len));
    data = copy.data();
  }
  const size_t size = size_t(len);

  ChunkDecoder dec(leaf, m.codec, what);
  size_t pos = 0;
  int64_t seen = 0;
  while (seen < m.num_values) {
    if (pos >= size)
      fail_corrupt(what + ": column chunk ends after " + std::to_string(seen) + " of its " +
                   std::to_string(m.num_values) + " values");
    size_t consumed = 0;
    PageHeader h = decode_page_header(data + pos, size - pos, what + ": page header", &consumed);
    pos += consumed;
    if (h.compressed_page_size < 0 || size_t(h.compressed_page_size) > size - pos)
      fail_corrupt(what + ": page of " + std::to_string(h.compressed_page_size) + " bytes runs past the column chunk");
    seen += dec.page(h, data + pos, size_t(h.compressed_page_size), m.num_values - seen);
    pos += size_t(h.compressed_page_size);
  }
  if (seen != m.num_values)
    fail_corrupt(what + ": pages hold " + std::to_string(seen) + " values, the column chunk says " + std::to_string(m.num_values));
  return dec.finish();
}

}  // namespace ember::io::parquet
