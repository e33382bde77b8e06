#include "ember/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <unordered_set>

#include "ember/core/error.h"

namespace ember::io::safetensors {

namespace {

struct DTypeRow {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeRow kDTypes[] = {
    {DType::kBool, "BOOL", 1},      {DType::kU8, "U8", 1},     {DType::kI8, "I8", 1},
    {DType::kF8_E5M2, "F8_E5M2", 1}, {DType::kF8_E4M3, "F8_E4M3", 1}, {DType::kI16, "I16", 2},
    {DType::kU16, "U16", 2},        {DType::kF16, "F16", 2},   {DType::kBF16, "BF16", 2},
    {DType::kI32, "I32", 4},        {DType::kU32, "U32", 4},   {DType::kF32, "F32", 4},
    {DType::kF64, "F64", 8},        {DType::kI64, "I64", 8},   {DType::kU64, "U64", 8},
};

// The reference library refuses headers above 100 MB (a guard against huge JSON).
constexpr uint64_t kMaxHeader = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";

const DTypeRow& row_of(DType d) { return kDTypes[static_cast<size_t>(d)]; }

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string shape_text(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The header (padded) and each tensor's place in the buffer, in write order.
struct Layout {
  std::string header;          // JSON, padded with spaces to a multiple of 8
  std::vector<size_t> order;   // indices into the entries, in buffer order
  uint64_t buffer_size = 0;
};

Layout plan(std::span<const TensorEntry> tensors, const Metadata& metadata) {
  std::unordered_set<std::string_view> names;
  for (const TensorEntry& t : tensors) {
    const std::string what = "safetensors: tensor '" + t.name + "'";
    if (t.name.empty()) fail(ErrorKind::kInvalidArgument, "safetensors: a tensor has an empty name");
    if (t.name == kMetadataKey) fail(ErrorKind::kInvalidArgument, what + ": the name is reserved");
    if (!names.insert(t.name).second) fail(ErrorKind::kInvalidArgument, what + ": duplicate name");
    auto n = num_elements(t.shape);
    if (!n) fail(ErrorKind::kInvalidArgument, what + ": bad shape " + shape_text(t.shape));
    const uint64_t want = uint64_t(*n) * dtype_size(t.dtype);
    if (t.bytes.size() != want) {
      fail(ErrorKind::kInvalidArgument, what + ": " + std::to_string(t.bytes.size()) +
                                            " bytes given, shape " + shape_text(t.shape) + " of " +
                                            dtype_name(t.dtype) + " needs " + std::to_string(want));
    }
  }

  // largest elements first, then by name: every tensor starts aligned to its element size
  Layout out;
  out.order.resize(tensors.size());
  std::iota(out.order.begin(), out.order.end(), size_t{0});
  std::sort(out.order.begin(), out.order.end(), [&](size_t a, size_t b) {
    size_t sa = dtype_size(tensors[a].dtype), sb = dtype_size(tensors[b].dtype);
    if (sa != sb) return sa > sb;
    return tensors[a].name < tensors[b].name;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    auto& m = header[kMetadataKey];
    m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
  }
  for (size_t i : out.order) {
    const TensorEntry& t = tensors[i];
    const uint64_t begin = out.buffer_size;
    out.buffer_size += t.bytes.size();
    header[t.name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {begin, out.buffer_size}}};
  }
  try {
    out.header = header.dump();
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::kInvalidArgument, std::string("safetensors: a name is not valid UTF-8: ") + e.what());
  }
  out.header.append((8 - out.header.size() % 8) % 8, ' ');
  return out;
}

void put_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}

}  // namespace

const char* dtype_name(DType dtype) { return row_of(dtype).name; }

size_t dtype_size(DType dtype) { return row_of(dtype).size; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const DTypeRow& r : kDTypes) {
    if (name == r.name) return r.dtype;
  }
  return std::nullopt;
}

std::optional<int64_t> num_elements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  // the byte count must fit too (8-byte elements at most)
  if (n > std::numeric_limits<int64_t>::max() / 8) return std::nullopt;
  return n;
}

std::vector<uint8_t> serialize(std::span<const TensorEntry> tensors, const Metadata& metadata) {
  Layout layout = plan(tensors, metadata);
  std::vector<uint8_t> out(8 + layout.header.size() + layout.buffer_size);
  put_le64(out.data(), layout.header.size());
  std::memcpy(out.data() + 8, layout.header.data(), layout.header.size());
  uint8_t* p = out.data() + 8 + layout.header.size();
  for (size_t i : layout.order) {
    if (!tensors[i].bytes.empty()) std::memcpy(p, tensors[i].bytes.data(), tensors[i].bytes.size());
    p += tensors[i].bytes.size();
  }
  return out;
}

void write_file(const std::string& path, std::span<const TensorEntry> tensors, const Metadata& metadata) {
  Layout layout = plan(tensors, metadata);
  AtomicFile file(path);
  uint8_t len[8];
  put_le64(len, layout.header.size());
  file.write(len, 8);
  file.write(layout.header.data(), layout.header.size());
  for (size_t i : layout.order) file.write(tensors[i].bytes.data(), tensors[i].bytes.size());
  file.commit();
}

// --- reading ---------------------------------------------------------------------------------

Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;
Reader::~Reader() = default;

Reader Reader::open(const std::string& path) { return from_source(open_file(path)); }

Reader Reader::from_source(std::unique_ptr<Source> source) {
  Reader r;
  r.source_ = std::move(source);
  r.parse();
  return r;
}

const std::string& Reader::name() const { return source_->name(); }

const TensorInfo& Reader::info(const std::string& tensor) const {
  auto it = index_.find(tensor);
  if (it == index_.end()) fail(ErrorKind::kNotFound, name() + ": no tensor '" + tensor + "'");
  return tensors_[it->second];
}

TensorView Reader::get(const std::string& tensor) const {
  const TensorInfo& t = info(tensor);
  return {t.dtype, t.shape, {buffer_ + t.begin, size_t(t.end - t.begin)}};
}

void Reader::parse() {
  const std::string& file = source_->name();
  const uint64_t size = source_->size();
  if (size < 8) {
    fail_corrupt(file + ": not a safetensors file: " + std::to_string(size) +
                 " bytes, shorter than the 8-byte header length");
  }
  uint8_t len_bytes[8];
  source_->read_at(0, 8, len_bytes);
  const uint64_t n = read_le64(len_bytes);
  if (n > size - 8) {
    fail_corrupt(file + ": header length " + std::to_string(n) + " runs past the end of the file (" +
                 std::to_string(size) + " bytes)");
  }
  if (n > kMaxHeader) {
    fail_corrupt(file + ": header length " + std::to_string(n) + " exceeds the 100 MB limit");
  }
  const std::vector<uint8_t> text = source_->read(8, n);

  // parse, refusing repeated top-level keys (the format forbids them; JSON parsers keep one)
  std::unordered_set<std::string> keys;
  std::string duplicate;
  auto on_event = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && duplicate.empty() &&
        !keys.insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text.begin(), text.end(), on_event);
  } catch (const nlohmann::json::exception& e) {
    fail_corrupt(file + ": header is not valid JSON: " + e.what());
  }
  if (!duplicate.empty()) fail_corrupt(file + ": header repeats the key '" + duplicate + "'");
  if (!header.is_object()) fail_corrupt(file + ": header is not a JSON object");

  buffer_offset_ = 8 + n;
  const uint64_t buffer_size = size - buffer_offset_;
  for (auto& [key, value] : header.items()) {
    const std::string where = file + ": tensor '" + key + "'";
    if (key == kMetadataKey) {
      if (value.is_null()) continue;
      if (!value.is_object()) fail_corrupt(file + ": __metadata__ is not an object");
      for (auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) fail_corrupt(file + ": __metadata__ '" + mk + "' is not a string");
        metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    if (!value.is_object()) fail_corrupt(where + ": entry is not an object");
    TensorInfo t;
    t.name = key;
    auto dt = value.find("dtype");
    if (dt == value.end() || !dt->is_string()) fail_corrupt(where + ": missing dtype string");
    auto parsed = parse_dtype(dt->get<std::string>());
    if (!parsed) fail_corrupt(where + ": unknown dtype '" + dt->get<std::string>() + "'");
    t.dtype = *parsed;
    auto sh = value.find("shape");
    if (sh == value.end() || !sh->is_array()) fail_corrupt(where + ": missing shape array");
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
        fail_corrupt(where + ": shape " + sh->dump() + " holds a value that is not a non-negative integer");
      }
      t.shape.push_back(d.get<int64_t>());
    }
    auto numel = num_elements(t.shape);
    if (!numel) fail_corrupt(where + ": shape " + sh->dump() + " overflows");
    auto off = value.find("data_offsets");
    if (off == value.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned()) {
      fail_corrupt(where + ": data_offsets is not a pair of non-negative integers");
    }
    t.begin = (*off)[0].get<uint64_t>();
    t.end = (*off)[1].get<uint64_t>();
    const std::string range = "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
    if (t.end < t.begin) fail_corrupt(where + ": " + range + " end before begin");
    if (t.end > buffer_size) {
      fail_corrupt(where + ": " + range + " run past the end of the data (" + std::to_string(buffer_size) +
                   " bytes)");
    }
    const uint64_t want = uint64_t(*numel) * dtype_size(t.dtype);
    if (t.end - t.begin != want) {
      fail_corrupt(where + ": " + range + " hold " + std::to_string(t.end - t.begin) + " bytes, shape " +
                   shape_text(t.shape) + " of " + dtype_name(t.dtype) + " needs " + std::to_string(want));
    }
    tensors_.push_back(std::move(t));
  }

  // the tensors must tile the buffer exactly: no overlap, no gap, nothing left at the end
  std::sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorInfo& t = tensors_[i];
    if (t.begin < covered) {
      fail_corrupt(file + ": tensor '" + t.name + "' overlaps tensor '" + tensors_[i - 1].name +
                   "' (begins at " + std::to_string(t.begin) + ", before " + std::to_string(covered) + ")");
    }
    if (t.begin > covered) {
      fail_corrupt(file + ": tensor '" + t.name + "' begins at " + std::to_string(t.begin) +
                   ", leaving the bytes from " + std::to_string(covered) +
                   " uncovered (the data must be contiguous)");
    }
    covered = t.end;
  }
  if (covered != buffer_size) {
    fail_corrupt(file + ": the tensors cover " + std::to_string(covered) + " of the " +
                 std::to_string(buffer_size) + " data bytes (the data must be fully covered)");
  }
  for (size_t i = 0; i < tensors_.size(); ++i) index_[tensors_[i].name] = i;

  buffer_ = buffer_size ? source_->view(buffer_offset_, buffer_size) : nullptr;
  if (!buffer_ && buffer_size) {
    owned_ = source_->read(buffer_offset_, buffer_size);
    buffer_ = owned_.data();
  }
  static const uint8_t kEmpty = 0;
  if (!buffer_) buffer_ = &kEmpty;
}

}  // namespace ember::io::safetensors
