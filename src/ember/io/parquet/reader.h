// Reads Parquet files (as pyarrow and LeRobot write them) into ember Tables.
//
//   auto file = parquet::FileReader::open("data/chunk-000/file-000.parquet");
//   io::Table t = file->read_rows(100, 200, {"action", "timestamp"});
//
// Column projection decodes only the chunks of the columns asked for; row-range reads touch
// only the row groups that hold the rows. Malformed files raise Error(kCorruption), features
// ember does not implement raise Error(kUnsupported); both name the file and the column.
// A FileReader may be used from several threads at once (it holds no mutable state).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/core/file.h"
#include "ember/io/column.h"
#include "ember/io/parquet/format.h"
#include "ember/io/parquet/schema.h"

namespace ember::io::parquet {

class FileReader {
 public:
  static std::unique_ptr<FileReader> open(const std::string& path);
  static std::unique_ptr<FileReader> open(std::unique_ptr<Source> source);

  const FileMetaData& metadata() const { return meta_; }
  const Schema& schema() const { return *schema_; }
  const std::string& name() const { return source_->name(); }
  int64_t num_rows() const { return meta_.num_rows; }
  int num_row_groups() const { return int(meta_.row_groups.size()); }
  int64_t row_group_rows(int i) const { return meta_.row_groups[size_t(i)].num_rows; }
  // First row of row group i within the file.
  int64_t row_group_start(int i) const { return row_group_start_[size_t(i)]; }
  std::vector<std::string> column_names() const;
  // A table with no rows whose columns have this file's types.
  Table empty_table(const std::vector<std::string>& columns = {}) const;

  // Reads whole row group i. `columns` names top-level columns (empty: all).
  Table read_row_group(int i, const std::vector<std::string>& columns = {}) const;
  // Reads rows [begin, end) (clamped to the file).
  Table read_rows(int64_t begin, int64_t end, const std::vector<std::string>& columns = {}) const;
  // Reads the whole file.
  Table read(const std::vector<std::string>& columns = {}) const { return read_rows(0, num_rows(), columns); }

 private:
  FileReader(std::unique_ptr<Source> source, FileMetaData meta);
  std::vector<const Node*> select(const std::vector<std::string>& columns) const;

  std::unique_ptr<Source> source_;
  FileMetaData meta_;
  std::unique_ptr<Schema> schema_;
  std::vector<int64_t> row_group_start_;
};

}  // namespace ember::io::parquet
