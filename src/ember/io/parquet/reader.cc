#include "ember/io/parquet/reader.h"

#include <algorithm>
#include <cstring>

#include "ember/core/error.h"
#include "ember/io/parquet/assemble.h"
#include "ember/io/parquet/column_reader.h"

namespace ember::io::parquet {

namespace {
constexpr char kMagic[4] = {'P', 'A', 'R', '1'};
}

std::unique_ptr<FileReader> FileReader::open(const std::string& path) { return open(open_file(path)); }

std::unique_ptr<FileReader> FileReader::open(std::unique_ptr<Source> source) {
  const std::string& what = source->name();
  uint64_t size = source->size();
  if (size < 12) fail_corrupt(what + ": not a Parquet file (" + std::to_string(size) + " bytes, too short)");
  std::vector<uint8_t> head = source->read(0, 4), tail = source->read(size - 8, 8);
  if (std::memcmp(tail.data() + 4, "PARE", 4) == 0)
    fail_unsupported(what + ": encrypted Parquet files (magic PARE) are not supported");
  if (std::memcmp(head.data(), kMagic, 4) != 0 || std::memcmp(tail.data() + 4, kMagic, 4) != 0)
    fail_corrupt(what + ": not a Parquet file (magic bytes PAR1 missing)");
  uint32_t footer_len;
  std::memcpy(&footer_len, tail.data(), 4);
  if (footer_len > size - 12)
    fail_corrupt(what + ": footer length " + std::to_string(footer_len) + " runs past the start of the file (" +
                 std::to_string(size) + " bytes)");
  std::vector<uint8_t> footer = source->read(size - 8 - footer_len, footer_len);
  FileMetaData meta = decode_file_metadata(footer.data(), footer.size(), what);
  return std::unique_ptr<FileReader>(new FileReader(std::move(source), std::move(meta)));
}

FileReader::FileReader(std::unique_ptr<Source> source, FileMetaData meta)
    : source_(std::move(source)), meta_(std::move(meta)) {
  const std::string& what = source_->name();
  schema_ = build_schema(meta_.schema, what);
  int64_t start = 0;
  for (size_t i = 0; i < meta_.row_groups.size(); ++i) {
    const RowGroup& g = meta_.row_groups[i];
    if (g.columns.size() != schema_->leaves.size())
      fail_corrupt(what + ": row group " + std::to_string(i) + " has " + std::to_string(g.columns.size()) +
                   " column chunks, the schema has " + std::to_string(schema_->leaves.size()) + " leaf columns");
    if (g.num_rows < 0 || g.num_rows > (int64_t(1) << 48))
      fail_corrupt(what + ": row group " + std::to_string(i) + " has num_rows " + std::to_string(g.num_rows));
    row_group_start_.push_back(start);
    start += g.num_rows;
  }
  if (start != meta_.num_rows)
    fail_corrupt(what + ": row groups hold " + std::to_string(start) + " rows, the footer says " + std::to_string(meta_.num_rows));
}

std::vector<std::string> FileReader::column_names() const {
  std::vector<std::string> names;
  for (const Node& n : schema_->fields) names.push_back(n.name);
  return names;
}

std::vector<const Node*> FileReader::select(const std::vector<std::string>& columns) const {
  std::vector<const Node*> out;
  if (columns.empty()) {
    for (const Node& n : schema_->fields) out.push_back(&n);
    return out;
  }
  for (const std::string& col : columns) {
    auto it = std::find_if(schema_->fields.begin(), schema_->fields.end(), [&](const Node& n) { return n.name == col; });
    if (it == schema_->fields.end()) {
      std::string have;
      for (const Node& n : schema_->fields) have += (have.empty() ? "" : ", ") + n.name;
      fail(ErrorKind::kNotFound, name() + ": no column '" + col + "' (columns: " + have + ")");
    }
    out.push_back(&*it);
  }
  return out;
}

Table FileReader::empty_table(const std::vector<std::string>& columns) const {
  Table t;
  for (const Node* n : select(columns)) t.columns.push_back(empty_column(*n));
  return t;
}

Table FileReader::read_row_group(int i, const std::vector<std::string>& columns) const {
  if (i < 0 || i >= num_row_groups())
    fail(ErrorKind::kInvalidArgument, name() + ": row group " + std::to_string(i) + " out of range (file has " +
                                          std::to_string(num_row_groups()) + ")");
  const RowGroup& g = meta_.row_groups[size_t(i)];
  Table t;
  for (const Node* n : select(columns)) {
    std::vector<LeafData> leaves;
    for (int k = 0; k < n->num_leaves; ++k) {
      const Node& leaf = *schema_->leaves[size_t(n->first_leaf + k)];
      std::string what = name() + ": column '" + n->name + "'";
      if (n->num_leaves > 1) what += " (leaf " + leaf.name + ")";
      what += ", row group " + std::to_string(i);
      leaves.push_back(read_column_chunk(*source_, g.columns[size_t(leaf.leaf_index)], leaf, g.num_rows, what));
    }
    t.columns.push_back(assemble(*schema_, *n, leaves, g.num_rows, name() + ": row group " + std::to_string(i)));
  }
  return t;
}

Table FileReader::read_rows(int64_t begin, int64_t end, const std::vector<std::string>& columns) const {
  begin = std::clamp<int64_t>(begin, 0, num_rows());
  end = std::clamp<int64_t>(end, begin, num_rows());
  Table out = empty_table(columns);
  for (int i = 0; i < num_row_groups(); ++i) {
    int64_t g0 = row_group_start(i), g1 = g0 + row_group_rows(i);
    if (g1 <= begin || g0 >= end || g0 == g1) continue;
    Table part = read_row_group(i, columns);
    int64_t lo = std::max(begin, g0) - g0, hi = std::min(end, g1) - g0;
    for (size_t c = 0; c < part.columns.size(); ++c) {
      if (lo == 0 && hi == g1 - g0 && out.columns[c].length == 0) out.columns[c] = std::move(part.columns[c]);
      else append(out.columns[c], lo == 0 && hi == g1 - g0 ? part.columns[c] : slice(part.columns[c], lo, hi));
    }
  }
  return out;
}

}  // namespace ember::io::parquet
