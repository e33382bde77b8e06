#include "ember/io/parquet/writer.h"

#include <set>

#include "ember/core/error.h"
#include "ember/io/parquet/column_writer.h"
#include "ember/io/parquet/shred.h"

namespace ember::io::parquet {

namespace {

const char kMagic[4] = {'P', 'A', 'R', '1'};

// The schema elements of column c as pyarrow writes them: optional/required from
// c.nullable, strings annotated STRING (UTF8), lists in the 3-level LIST layout
//   <optional|required> group NAME (LIST) { repeated group list { <...> element; } }
void add_schema(const Column& c, std::vector<SchemaElement>& out) {
  SchemaElement e;
  e.name = c.name;
  e.repetition = c.nullable ? Repetition::kOptional : Repetition::kRequired;
  switch (c.type) {
    case TypeId::kList: {
      e.num_children = 1;
      e.converted_type = kList;
      e.logical_type = kLogicalList;
      out.push_back(e);
      SchemaElement rep;
      rep.name = "list";
      rep.repetition = Repetition::kRepeated;
      rep.num_children = 1;
      out.push_back(rep);
      add_schema(c.children[0], out);
      return;
    }
    case TypeId::kStruct:
      e.num_children = int32_t(c.children.size());
      out.push_back(e);
      for (const Column& f : c.children) add_schema(f, out);
      return;
    default:
      e.type = physical_type_of(c.type);
      if (c.type == TypeId::kString) {
        e.converted_type = kUtf8;
        e.logical_type = kLogicalString;
      }
      out.push_back(e);
  }
}

std::string dotted(const std::vector<std::string>& path) {
  std::string s;
  for (const std::string& p : path) s += (s.empty() ? "" : ".") + p;
  return s;
}

// What must stay equal across row groups: names, types and nullability, all the way down.
std::string signature(const Column& c) { return c.name + ": " + type_string(c); }

}  // namespace

struct FileWriter::Impl {
  Impl(std::string p, WriteOptions o) : path(std::move(p)), options(std::move(o)), file(path) {}

  std::string path;
  WriteOptions options;
  AtomicFile file;
  FileMetaData meta;
  std::vector<std::string> signatures;  // [columns] fixed by the first row group
  bool closed = false;
  std::string failure;  // set when a write failed half-way: the file is unusable from then on

  void check_usable() const {
    if (closed) fail(ErrorKind::kInvalidArgument, path + ": Parquet writer used after close()");
    if (!failure.empty()) fail(ErrorKind::kIO, path + ": an earlier write failed (" + failure + ")");
  }

  // Everything that can be wrong with a caller's table, checked before any byte is written.
  void check_table(const Table& t) const {
    if (t.columns.empty()) fail(ErrorKind::kInvalidArgument, path + ": a row group needs at least one column");
    std::set<std::string> names;
    for (const Column& c : t.columns) {
      if (!names.insert(c.name).second)
        fail(ErrorKind::kInvalidArgument, path + ": column '" + c.name + "' appears twice");
      if (c.length != t.columns[0].length)
        fail(ErrorKind::kInvalidArgument, path + ": column '" + c.name + "' has " + std::to_string(c.length) +
                                              " rows, column '" + t.columns[0].name + "' " +
                                              std::to_string(t.columns[0].length));
      check_column(c, path);
    }
    if (signatures.empty()) return;
    if (t.columns.size() != signatures.size())
      fail(ErrorKind::kInvalidArgument, path + ": row group has " + std::to_string(t.columns.size()) +
                                            " columns, the first row group had " + std::to_string(signatures.size()));
    for (size_t i = 0; i < signatures.size(); ++i)
      if (signature(t.columns[i]) != signatures[i])
        fail(ErrorKind::kInvalidArgument, path + ": column '" + t.columns[i].name + "' is {" + signature(t.columns[i]) +
                                              "}, the first row group had {" + signatures[i] + "}");
  }

  void set_schema(const Table& t) {
    SchemaElement root;
    root.name = "schema";
    root.num_children = int32_t(t.columns.size());
    meta.schema.push_back(root);
    for (const Column& c : t.columns) {
      add_schema(c, meta.schema);
      signatures.push_back(signature(c));
    }
  }

  void write_row_group(const Table& t) {
    RowGroup g;
    g.num_rows = t.num_rows();
    for (const Column& c : t.columns) {
      for (const ShreddedLeaf& leaf : shred(c)) {
        std::string what = path + ": column '" + dotted(leaf.path) + "'";
        g.columns.push_back(write_column_chunk(leaf, options, file, what));
        g.total_byte_size += g.columns.back().meta_data.total_uncompressed_size;
      }
    }
    meta.num_rows += g.num_rows;
    meta.row_groups.push_back(std::move(g));
  }

  void close() {
    meta.version = 2;
    meta.key_value_metadata = options.key_value_metadata;
    meta.created_by = options.created_by;
    std::vector<uint8_t> footer = encode_file_metadata(meta);
    uint8_t len[4];
    for (int i = 0; i < 4; ++i) len[i] = uint8_t(footer.size() >> (8 * i));
    file.write(footer.data(), footer.size());
    file.write(len, 4);
    file.write(kMagic, 4);
    file.commit();
  }
};

FileWriter::FileWriter(std::string path, WriteOptions options) {
  Codec c = options.codec;
  if (c != Codec::kUncompressed && c != Codec::kSnappy && c != Codec::kZstd)
    fail(ErrorKind::kInvalidArgument, path + ": the Parquet writer does not support codec " + codec_name(c) +
                                          " (UNCOMPRESSED, SNAPPY and ZSTD only)");
  impl_ = std::make_unique<Impl>(std::move(path), std::move(options));
  impl_->file.write(kMagic, 4);
}

// Destroying impl_ destroys its AtomicFile, which removes the temporary file unless committed.
FileWriter::~FileWriter() = default;

void FileWriter::write_row_group(const Table& table) {
  impl_->check_usable();
  impl_->check_table(table);
  try {
    if (impl_->signatures.empty()) impl_->set_schema(table);
    impl_->write_row_group(table);
  } catch (const std::exception& e) {
    impl_->failure = e.what();
    throw;
  }
}

void FileWriter::close() {
  impl_->check_usable();
  if (impl_->meta.row_groups.empty())
    fail(ErrorKind::kInvalidArgument, impl_->path + ": close() before any write_row_group(): the schema is unknown");
  try {
    impl_->close();
  } catch (const std::exception& e) {
    impl_->failure = e.what();
    throw;
  }
  impl_->closed = true;
}

void write_table(const std::string& path, const Table& table, const WriteOptions& options) {
  FileWriter w(path, options);
  w.write_row_group(table);
  w.close();
}

}  // namespace ember::io::parquet
