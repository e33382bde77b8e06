// Placeholder replaced by the writer implementation.
#include "ember/io/parquet/writer.h"

#include "ember/core/error.h"

namespace ember::io::parquet {

struct FileWriter::Impl {};
FileWriter::FileWriter(std::string, WriteOptions) { fail(ErrorKind::kInternal, "Parquet writer not built yet"); }
FileWriter::~FileWriter() = default;
void FileWriter::write_row_group(const Table&) {}
void FileWriter::close() {}
void write_table(const std::string& path, const Table& table, const WriteOptions& options) {
  FileWriter w(path, options);
  w.write_row_group(table);
  w.close();
}

}  // namespace ember::io::parquet
