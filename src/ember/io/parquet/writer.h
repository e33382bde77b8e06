// Writes Parquet files that pyarrow (and so LeRobot) reads: the column types of
// ember::io::Column, PLAIN or dictionary encoding, SNAPPY / ZSTD / no compression, v1 data
// pages, one row group per write_row_group() call (LeRobot's recorder puts one episode in a
// row group). The file is written under a temporary name and renamed into place by close();
// a writer destroyed without close() leaves any earlier file at the path untouched.
//
//   parquet::FileWriter w("episode.parquet", {.codec = parquet::Codec::kSnappy});
//   w.write_row_group(table);
//   w.close();
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/core/file.h"
#include "ember/io/column.h"
#include "ember/io/parquet/format.h"

namespace ember::io::parquet {

struct WriteOptions {
  Codec codec = Codec::kSnappy;
  // Dictionary-encode columns; a column chunk whose dictionary would pass
  // dictionary_page_limit bytes is written PLAIN instead.
  bool dictionary = true;
  int64_t dictionary_page_limit = int64_t(1) << 20;
  int64_t data_page_size = int64_t(1) << 20;  // target uncompressed bytes per data page
  std::vector<KeyValue> key_value_metadata;
  std::string created_by = "ember";
};

class FileWriter {
 public:
  explicit FileWriter(std::string path, WriteOptions options = {});
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  // Writes one row group. The first call fixes the schema (names, types, nullability, from
  // the columns); later calls must have the same schema (kInvalidArgument otherwise).
  void write_row_group(const Table& table);
  // Writes the footer and renames the file into place. Throws on I/O failure.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes `table` as a file with one row group.
void write_table(const std::string& path, const Table& table, const WriteOptions& options = {});

}  // namespace ember::io::parquet
