#include "ember/io/parquet/column_writer.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "ember/core/error.h"
#include "ember/io/parquet/compression.h"
#include "ember/io/parquet/encoding.h"

namespace ember::io::parquet {

namespace {

// Every page size and count in a page header is an int32.
constexpr int64_t kMaxPageBytes = INT32_MAX;
constexpr int64_t kMaxPageEntries = int64_t(1) << 30;

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

// PLAIN encoding of the leaf values at slots[0..n) of column c, appended to out.
void encode_plain(const Column& c, const int64_t* slots, size_t n, std::vector<uint8_t>& out, const std::string& what) {
  size_t at = out.size();
  if (c.type == TypeId::kBool) {  // bit-packed, LSB first
    out.resize(at + (n + 7) / 8, 0);
    for (size_t i = 0; i < n; ++i)
      if (c.values[size_t(slots[i])]) out[at + i / 8] |= uint8_t(1u << (i % 8));
    return;
  }
  if (size_t w = fixed_width(c.type); w > 0) {
    out.resize(at + n * w);
    // slots strictly increase, so equal distance means one contiguous run (the common case)
    if (n > 0 && slots[n - 1] - slots[0] == int64_t(n) - 1) {
      std::memcpy(out.data() + at, c.values.data() + size_t(slots[0]) * w, n * w);
    } else {
      for (size_t i = 0; i < n; ++i) std::memcpy(out.data() + at + i * w, c.values.data() + size_t(slots[i]) * w, w);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    std::string_view s = c.str(slots[i]);
    if (s.size() > size_t(kMaxPageBytes))
      fail(ErrorKind::kInvalidArgument, what + ": a value of " + std::to_string(s.size()) + " bytes is over Parquet's 2 GiB limit");
    put_u32(out, uint32_t(s.size()));
    out.insert(out.end(), s.begin(), s.end());
  }
}

struct Dictionary {
  std::vector<int64_t> slots;     // [entries] leaf slot of each entry's first occurrence
  std::vector<uint32_t> indices;  // [num_values] the entry of each non-null value
};

// Builds the chunk's dictionary, or nothing once its PLAIN size passes `limit` bytes.
// Fixed-width values are keyed by their bits, so -0.0 and 0.0 (and NaNs) stay distinct.
std::optional<Dictionary> build_dictionary(const Column& c, const std::vector<int64_t>& slots, int64_t limit) {
  Dictionary d;
  d.indices.reserve(slots.size());
  int64_t bytes = 0;
  auto add = [&](auto& map, auto key, int64_t slot, int64_t size) {
    auto [it, inserted] = map.try_emplace(key, uint32_t(d.slots.size()));
    if (inserted) {
      bytes += size;
      if (bytes > limit) return false;
      d.slots.push_back(slot);
    }
    d.indices.push_back(it->second);
    return true;
  };
  if (size_t w = fixed_width(c.type); w > 0) {
    std::unordered_map<uint64_t, uint32_t> map;
    for (int64_t s : slots) {
      uint64_t key = 0;
      std::memcpy(&key, c.values.data() + size_t(s) * w, w);
      if (!add(map, key, s, int64_t(w))) return std::nullopt;
    }
  } else {
    std::unordered_map<std::string_view, uint32_t> map;
    for (int64_t s : slots) {
      std::string_view v = c.str(s);
      if (!add(map, v, s, 4 + int64_t(v.size()))) return std::nullopt;
    }
  }
  return d;
}

class ChunkWriter {
 public:
  ChunkWriter(const ShreddedLeaf& leaf, const WriteOptions& options, AtomicFile& out, const std::string& what)
      : leaf_(leaf), col_(*leaf.leaf), options_(options), out_(out), what_(what) {}

  ColumnChunk write() && {
    ColumnChunk chunk;
    chunk.file_offset = 0;  // deprecated field; pyarrow writes 0 too, readers use the page offsets
    chunk.has_meta_data = true;
    ColumnMetaData& m = chunk.meta_data;
    m.type = physical_type_of(col_.type);
    m.path_in_schema = leaf_.path;
    m.codec = options_.codec;
    m.num_values = leaf_.num_entries;
    if (options_.dictionary && col_.type != TypeId::kBool)
      dict_ = build_dictionary(col_, leaf_.slots, options_.dictionary_page_limit);
    if (dict_) {
      m.dictionary_page_offset = int64_t(out_.bytes_written());
      write_dictionary_page();
    }
    m.data_page_offset = int64_t(out_.bytes_written());
    write_data_pages();
    m.encodings = {Encoding::kPlain, Encoding::kRle};
    if (dict_) m.encodings.push_back(Encoding::kRleDictionary);
    m.total_uncompressed_size = uncompressed_;
    m.total_compressed_size = compressed_;
    return chunk;
  }

 private:
  void write_dictionary_page() {
    body_.clear();
    encode_plain(col_, dict_->slots.data(), dict_->slots.size(), body_, what_);
    PageHeader h;
    h.type = PageType::kDictionaryPage;
    h.dictionary_page = DictionaryPageHeader{int32_t(dict_->slots.size()), Encoding::kPlain};
    write_page(h);
  }

  // Splits the levels into pages of about data_page_size bytes, cutting only where a row
  // starts (repetition level 0) so that no row spans two pages.
  void write_data_pages() {
    const int64_t n = leaf_.num_entries;
    const int64_t level_bits = bit_width_for(uint32_t(leaf_.max_rep)) + bit_width_for(uint32_t(leaf_.max_def));
    const int64_t limit_bits = std::max<int64_t>(options_.data_page_size, 1) * 8;
    int64_t e = 0, v = 0;
    do {
      int64_t e_end = e, v_end = v, bits = 0;
      while (e_end < n) {
        bool row_start = leaf_.max_rep == 0 || leaf_.rep[size_t(e_end)] == 0;
        if (e_end > e && row_start && (bits >= limit_bits || e_end - e >= kMaxPageEntries)) break;
        bits += level_bits;
        if (leaf_.max_def == 0 || leaf_.def[size_t(e_end)] == leaf_.max_def) bits += value_bits(v_end++);
        ++e_end;
      }
      write_data_page(e, e_end, v, v_end);
      e = e_end;
      v = v_end;
    } while (e < n);
  }

  // Estimated encoded size of value v, for page splitting.
  int64_t value_bits(int64_t v) const {
    if (dict_) return dict_bit_width();
    if (col_.type == TypeId::kBool) return 1;
    if (size_t w = fixed_width(col_.type); w > 0) return int64_t(w) * 8;
    return (4 + int64_t(col_.str(leaf_.slots[size_t(v)]).size())) * 8;
  }
  int dict_bit_width() const { return std::max(1, bit_width_for(uint32_t(std::max<size_t>(dict_->slots.size(), 1) - 1))); }

  // Entries [e0, e1) holding values [v0, v1).
  void write_data_page(int64_t e0, int64_t e1, int64_t v0, int64_t v1) {
    if (e1 - e0 > kMaxPageEntries)
      fail(ErrorKind::kInvalidArgument, what_ + ": a row has " + std::to_string(e1 - e0) + " values, over a page's limit");
    body_.clear();
    if (leaf_.max_rep > 0) put_levels(leaf_.rep, e0, e1, leaf_.max_rep);
    if (leaf_.max_def > 0) put_levels(leaf_.def, e0, e1, leaf_.max_def);
    if (dict_) {
      int w = dict_bit_width();
      body_.push_back(uint8_t(w));
      RleEncoder enc(w);
      for (int64_t v = v0; v < v1; ++v) enc.put(dict_->indices[size_t(v)]);
      std::vector<uint8_t> idx = enc.finish();
      body_.insert(body_.end(), idx.begin(), idx.end());
    } else {
      encode_plain(col_, leaf_.slots.data() + v0, size_t(v1 - v0), body_, what_);
    }
    PageHeader h;
    h.type = PageType::kDataPage;
    h.data_page = DataPageHeader{int32_t(e1 - e0), dict_ ? Encoding::kRleDictionary : Encoding::kPlain,
                                 Encoding::kRle, Encoding::kRle};
    write_page(h);
  }

  // v1 levels: a 4-byte little-endian length, then the RLE / bit-packed hybrid.
  void put_levels(const std::vector<int16_t>& levels, int64_t e0, int64_t e1, int16_t max_level) {
    RleEncoder enc(bit_width_for(uint32_t(max_level)));
    for (int64_t e = e0; e < e1; ++e) enc.put(uint32_t(levels[size_t(e)]));
    std::vector<uint8_t> bytes = enc.finish();
    put_u32(body_, uint32_t(bytes.size()));
    body_.insert(body_.end(), bytes.begin(), bytes.end());
  }

  // Compresses body_ and appends header and page to the file.
  void write_page(PageHeader& h) {
    if (int64_t(body_.size()) > kMaxPageBytes)
      fail(ErrorKind::kInvalidArgument, what_ + ": a page of " + std::to_string(body_.size()) +
                                            " bytes is over Parquet's 2 GiB limit (one row too large?)");
    const std::vector<uint8_t>* page = &body_;
    if (options_.codec != Codec::kUncompressed) {
      compress(options_.codec, body_.data(), body_.size(), packed_);
      page = &packed_;
    }
    h.uncompressed_page_size = int32_t(body_.size());
    h.compressed_page_size = int32_t(page->size());
    std::vector<uint8_t> header = encode_page_header(h);
    out_.write(header.data(), header.size());
    out_.write(page->data(), page->size());
    uncompressed_ += int64_t(header.size() + body_.size());
    compressed_ += int64_t(header.size() + page->size());
  }

  const ShreddedLeaf& leaf_;
  const Column& col_;
  const WriteOptions& options_;
  AtomicFile& out_;
  const std::string& what_;
  std::optional<Dictionary> dict_;
  std::vector<uint8_t> body_, packed_;  // the page being written, uncompressed and compressed
  int64_t uncompressed_ = 0, compressed_ = 0;
};

}  // namespace

PhysicalType physical_type_of(TypeId type) {
  switch (type) {
    case TypeId::kBool: return PhysicalType::kBoolean;
    case TypeId::kInt32: return PhysicalType::kInt32;
    case TypeId::kInt64: return PhysicalType::kInt64;
    case TypeId::kFloat: return PhysicalType::kFloat;
    case TypeId::kDouble: return PhysicalType::kDouble;
    case TypeId::kString: case TypeId::kBinary: return PhysicalType::kByteArray;
    case TypeId::kList: case TypeId::kStruct: break;
  }
  fail(ErrorKind::kInternal, std::string("physical_type_of: ") + type_name(type) + " is not a leaf type");
}

ColumnChunk write_column_chunk(const ShreddedLeaf& leaf, const WriteOptions& options, AtomicFile& out,
                               const std::string& what) {
  return ChunkWriter(leaf, options, out, what).write();
}

}  // namespace ember::io::parquet
