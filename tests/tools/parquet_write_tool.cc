// parquet_write_tool OUT_DIR
//
// Writes Parquet files with ember's writer for tests/python/test_interop.py, which reads them
// with pyarrow. Next to each FILE.parquet goes FILE.expected.json:
//   {"columns": {name: [value per row]}, "types": {name: pyarrow type string},
//    "nullable": {name: bool}, "row_groups": n, "metadata": {key: value}}
// Values: float32 as the exact double of the float, binary as lowercase hex, null as null.
// The data is pseudo-random from fixed seeds (own generator, so the same on every platform).
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/io/json.h"
#include "ember/io/parquet/writer.h"

namespace {

using namespace ember::io;
using ember::io::parquet::Codec;
using ember::io::parquet::WriteOptions;

// splitmix64: tiny, and identical everywhere (std distributions are not).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int64_t uniform(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
  bool chance(double p) { return double(next() >> 11) * 0x1.0p-53 < p; }
};

// ---- type specs and random data ----

Column spec(std::string name, TypeId type, bool nullable = true, std::vector<Column> children = {}) {
  Column c;
  c.name = std::move(name);
  c.type = type;
  c.nullable = nullable;
  c.children = std::move(children);
  return c;
}
Column list_of(std::string name, Column element, bool nullable = true) {
  element.name = "element";
  return spec(std::move(name), TypeId::kList, nullable, {std::move(element)});
}

void put_random_value(Rng& rng, TypeId type, uint8_t* p) {
  switch (type) {
    case TypeId::kBool: *p = uint8_t(rng.next() & 1); return;
    case TypeId::kInt32: {
      int32_t v = rng.chance(0.1) ? (rng.chance(0.5) ? INT32_MIN : INT32_MAX) : int32_t(rng.uniform(-1000, 1000));
      std::memcpy(p, &v, 4);
      return;
    }
    case TypeId::kInt64: {
      int64_t v = rng.chance(0.1) ? (rng.chance(0.5) ? INT64_MIN : INT64_MAX) : rng.uniform(-1000000, 1000000);
      std::memcpy(p, &v, 8);
      return;
    }
    case TypeId::kFloat: {  // any finite float: random sign, exponent and mantissa
      uint32_t bits = uint32_t(rng.next());
      if (((bits >> 23) & 0xff) == 0xff) bits &= ~(1u << 23);
      float v = rng.chance(0.3) ? float(rng.uniform(-100, 100)) * 0.1f : 0;
      if (!rng.chance(0.3)) std::memcpy(&v, &bits, 4);
      std::memcpy(p, &v, 4);
      return;
    }
    case TypeId::kDouble: {
      uint64_t bits = rng.next();
      if (((bits >> 52) & 0x7ff) == 0x7ff) bits &= ~(uint64_t(1) << 52);
      double v = rng.chance(0.3) ? double(rng.uniform(-100, 100)) * 0.1 : 0;
      if (!rng.chance(0.3)) std::memcpy(&v, &bits, 8);
      std::memcpy(p, &v, 8);
      return;
    }
    default: return;
  }
}

std::string random_bytes(Rng& rng, TypeId type) {
  static const char* words[] = {"", "a", "pick up the cube", "héllo wörld", "日本語", "emoji 🤖", "tab\there", "quote\"back\\"};
  std::string s;
  if (type == TypeId::kString) {
    s = words[rng.uniform(0, 7)];
    if (rng.chance(0.5)) s += std::to_string(rng.uniform(0, 20));
    return s;
  }
  int64_t n = rng.chance(0.2) ? 0 : rng.uniform(1, 12);
  for (int64_t i = 0; i < n; ++i) s.push_back(char(rng.next() & 0xff));
  return s;
}

// `length` rows of spec's type; slots in forced_null (a null parent struct) are null too.
Column fill(Rng& rng, const Column& spec, int64_t length, double null_p, const std::vector<uint8_t>* forced_null = nullptr) {
  Column c;
  c.name = spec.name;
  c.type = spec.type;
  c.nullable = spec.nullable;
  c.length = length;
  bool any_null = false;
  c.validity.assign(size_t(length), 1);
  for (int64_t i = 0; i < length; ++i) {
    bool null = (forced_null && (*forced_null)[size_t(i)]) || (spec.nullable && rng.chance(null_p));
    c.validity[size_t(i)] = !null;
    any_null |= null;
  }
  if (!any_null) c.validity.clear();
  if (size_t w = fixed_width(c.type); w > 0) {
    c.values.assign(size_t(length) * w, 0);
    for (int64_t i = 0; i < length; ++i)
      if (c.is_valid(i)) put_random_value(rng, c.type, c.values.data() + size_t(i) * w);
    return c;
  }
  if (c.type == TypeId::kStruct) {
    std::vector<uint8_t> nulls(static_cast<size_t>(length), 0);
    for (int64_t i = 0; i < length; ++i) nulls[size_t(i)] = !c.is_valid(i);
    for (const Column& f : spec.children) c.children.push_back(fill(rng, f, length, null_p, &nulls));
    return c;
  }
  c.offsets.push_back(0);
  int64_t total = 0;
  for (int64_t i = 0; i < length; ++i) {
    if (c.type == TypeId::kList) {
      total += c.is_valid(i) ? rng.uniform(0, 4) : 0;
    } else if (c.is_valid(i)) {
      std::string s = random_bytes(rng, c.type);
      c.values.insert(c.values.end(), s.begin(), s.end());
      total = int64_t(c.values.size());
    }
    c.offsets.push_back(total);
  }
  if (c.type == TypeId::kList) c.children.push_back(fill(rng, spec.children[0], total, null_p));
  return c;
}

// ---- expected JSON ----

void append_exact(std::string& out, double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that reads back to this double
  out.append(buf, r.ptr);
}

void cell(std::string& out, const Column& c, int64_t row) {
  if (!c.is_valid(row)) {
    out += "null";
    return;
  }
  switch (c.type) {
    case TypeId::kBool: out += c.value<uint8_t>(row) ? "true" : "false"; return;
    case TypeId::kInt32: out += std::to_string(c.value<int32_t>(row)); return;
    case TypeId::kInt64: out += std::to_string(c.value<int64_t>(row)); return;
    case TypeId::kFloat: append_exact(out, double(c.value<float>(row))); return;
    case TypeId::kDouble: append_exact(out, c.value<double>(row)); return;
    case TypeId::kString: append_json_string(out, c.str(row)); return;
    case TypeId::kBinary: {
      out.push_back('"');
      for (unsigned char b : c.str(row)) {
        out.push_back("0123456789abcdef"[b >> 4]);
        out.push_back("0123456789abcdef"[b & 15]);
      }
      out.push_back('"');
      return;
    }
    case TypeId::kList:
      out.push_back('[');
      for (int64_t i = c.offsets[size_t(row)]; i < c.offsets[size_t(row) + 1]; ++i) {
        if (i > c.offsets[size_t(row)]) out.push_back(',');
        cell(out, c.children[0], i);
      }
      out.push_back(']');
      return;
    case TypeId::kStruct:
      out.push_back('{');
      for (size_t k = 0; k < c.children.size(); ++k) {
        if (k) out.push_back(',');
        append_json_string(out, c.children[k].name);
        out.push_back(':');
        cell(out, c.children[k], row);
      }
      out.push_back('}');
      return;
  }
}

// The type as str() of pyarrow's DataType prints it, e.g. "list<element: float not null>".
std::string arrow_type(const Column& c) {
  auto field = [](const Column& f) { return f.name + ": " + arrow_type(f) + (f.nullable ? "" : " not null"); };
  switch (c.type) {
    case TypeId::kList: return "list<" + field(c.children[0]) + ">";
    case TypeId::kStruct: {
      std::string s = "struct<";
      for (size_t k = 0; k < c.children.size(); ++k) s += (k ? ", " : "") + field(c.children[k]);
      return s + ">";
    }
    default: return type_name(c.type);
  }
}

void write_expected(const std::string& file, const std::vector<Table>& groups, const WriteOptions& o) {
  std::string out = "{\"row_groups\": " + std::to_string(groups.size()) + ",\n \"metadata\": {";
  for (size_t i = 0; i < o.key_value_metadata.size(); ++i) {
    out += i ? ", " : "";
    append_json_string(out, o.key_value_metadata[i].key);
    out += ": ";
    append_json_string(out, o.key_value_metadata[i].value);
  }
  std::string types, nullable, columns;
  const Table& first = groups[0];
  for (size_t k = 0; k < first.columns.size(); ++k) {
    const Column& c = first.columns[k];
    std::string sep = k ? ",\n  " : "\n  ";
    types += sep;
    append_json_string(types, c.name);
    types += ": ";
    append_json_string(types, arrow_type(c));
    nullable += sep;
    append_json_string(nullable, c.name);
    nullable += c.nullable ? ": true" : ": false";
    columns += sep;
    append_json_string(columns, c.name);
    columns += ": [";
    bool any = false;
    for (const Table& g : groups)
      for (int64_t r = 0; r < g.num_rows(); ++r) {
        if (any) columns += ", ";
        cell(columns, g.columns[k], r);
        any = true;
      }
    columns += "]";
  }
  out += "},\n \"types\": {" + types + "},\n \"nullable\": {" + nullable + "},\n \"columns\": {" + columns + "}}\n";
  std::ofstream f(file, std::ios::binary);
  f << out;
  if (!f) ember::fail(ember::ErrorKind::kIO, file + ": cannot write");
}

void write_case(const std::string& dir, const std::string& name, const std::vector<Table>& groups, const WriteOptions& o) {
  std::string base = dir + "/" + name;
  ember::io::parquet::FileWriter w(base + ".parquet", o);
  for (const Table& g : groups) w.write_row_group(g);
  w.close();
  write_expected(base + ".expected.json", groups, o);
  std::printf("%s.parquet: %zu row groups\n", name.c_str(), groups.size());
}

// ---- the cases ----

std::vector<Column> all_types() {
  std::vector<Column> out;
  const TypeId leaves[] = {TypeId::kBool, TypeId::kInt32, TypeId::kInt64, TypeId::kFloat,
                           TypeId::kDouble, TypeId::kString, TypeId::kBinary};
  for (TypeId t : leaves) {
    std::string n = type_name(t);
    out.push_back(spec(n, t));
    out.push_back(spec(n + "_not_null", t, false));
    out.push_back(list_of("list_" + n, spec("", t)));
  }
  out.push_back(list_of("list3_double", list_of("", list_of("", spec("", TypeId::kDouble)))));
  out.push_back(list_of("list3_not_null", list_of("", list_of("", spec("", TypeId::kInt64, false), false), false), false));
  out.push_back(list_of("list2_int64", list_of("", spec("", TypeId::kInt64))));
  out.push_back(spec("image", TypeId::kStruct, true, {spec("bytes", TypeId::kBinary), spec("path", TypeId::kString)}));
  out.push_back(spec("struct_mixed", TypeId::kStruct, true,
                     {spec("id", TypeId::kInt32, false), list_of("v", spec("", TypeId::kFloat), false)}));
  out.push_back(list_of("list_struct", spec("", TypeId::kStruct, true, {spec("x", TypeId::kDouble), spec("tag", TypeId::kString)})));
  return out;
}

std::vector<Table> random_groups(uint64_t seed, const std::vector<Column>& specs, std::vector<int64_t> rows, double null_p) {
  Rng rng{seed};
  std::vector<Table> groups;
  for (int64_t n : rows) {
    Table t;
    for (const Column& s : specs) t.columns.push_back(fill(rng, s, n, null_p));
    groups.push_back(std::move(t));
  }
  return groups;
}

// One episode of a LeRobot v2.1 dataset per row group: the columns LeRobot's recorder writes.
std::vector<Table> lerobot_episodes(int episodes) {
  Rng rng{42};
  std::vector<Table> groups;
  int64_t index = 0;
  for (int ep = 0; ep < episodes; ++ep) {
    int64_t n = 20 + rng.uniform(0, 30);
    std::vector<float> state, action, ts;
    std::vector<int64_t> frame, epi, idx, task_index;
    std::vector<bool> done;
    std::vector<std::string> task, png, path;
    for (int64_t i = 0; i < n; ++i) {
      for (int j = 0; j < 6; ++j) {
        state.push_back(float(rng.uniform(-3000, 3000)) / 1000.0f);
        action.push_back(float(rng.uniform(-3000, 3000)) / 1000.0f);
      }
      ts.push_back(float(i) / 30.0f);
      frame.push_back(i);
      epi.push_back(ep);
      idx.push_back(index++);
      task_index.push_back(ep % 2);
      done.push_back(i + 1 == n);
      task.push_back(ep % 2 ? "stack the red block on the blue one" : "pick up the cube");
      png.push_back(std::string("\x89PNG\r\n\x1a\n", 8) + random_bytes(rng, TypeId::kBinary));
      path.push_back("images/episode_" + std::to_string(ep) + "/frame_" + std::to_string(i) + ".png");
    }
    Table t;
    t.columns.push_back(make_list("observation.state", make_float("element", state), std::vector<int64_t>(size_t(n), 6)));
    t.columns.push_back(make_list("action", make_float("element", action), std::vector<int64_t>(size_t(n), 6)));
    t.columns.push_back(make_struct("observation.images.top", {make_string("bytes", png, TypeId::kBinary), make_string("path", path)}));
    t.columns.push_back(make_float("timestamp", ts));
    t.columns.push_back(make_int64("frame_index", frame));
    t.columns.push_back(make_int64("episode_index", epi));
    t.columns.push_back(make_int64("index", idx));
    t.columns.push_back(make_int64("task_index", task_index));
    t.columns.push_back(make_bool("next.done", done));
    t.columns.push_back(make_string("task", task));
    groups.push_back(std::move(t));
  }
  return groups;
}

WriteOptions options(Codec codec, bool dictionary, int64_t page, int64_t dictionary_limit = int64_t(1) << 20) {
  WriteOptions o;
  o.codec = codec;
  o.dictionary = dictionary;
  o.data_page_size = page;
  o.dictionary_page_limit = dictionary_limit;
  return o;
}

void run(const std::string& dir) {
  std::filesystem::create_directories(dir);
  WriteOptions lerobot = options(Codec::kSnappy, true, int64_t(1) << 20);
  lerobot.key_value_metadata = {{"huggingface", R"({"info": {"features": {"observation.state": {"dtype": "float32"}}}})"}};
  write_case(dir, "lerobot_episodes", lerobot_episodes(4), lerobot);

  const std::vector<Column> types = all_types();
  uint64_t seed = 1;
  for (Codec codec : {Codec::kUncompressed, Codec::kSnappy, Codec::kZstd})
    for (bool dict : {true, false}) {
      std::string name = std::string("types_") + ember::io::parquet::codec_name(codec) + (dict ? "_dict" : "_plain");
      write_case(dir, name, random_groups(seed++, types, {60, 1, 0, 45}, 0.25), options(codec, dict, 256));
    }
  write_case(dir, "types_no_nulls_big_pages", random_groups(seed++, types, {300}, 0.0), options(Codec::kZstd, true, int64_t(1) << 20));
  write_case(dir, "dictionary_fallback", random_groups(seed++, types, {200, 150}, 0.1), options(Codec::kSnappy, true, 512, 64));
  write_case(dir, "one_byte_pages", random_groups(seed++, types, {40}, 0.3), options(Codec::kUncompressed, true, 1));
  write_case(dir, "all_nulls", random_groups(seed++, types, {30, 5}, 1.0), options(Codec::kZstd, true, 64));
  write_case(dir, "empty", random_groups(seed++, types, {0}, 0.3), options(Codec::kSnappy, true, 256));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: parquet_write_tool OUT_DIR\n");
    return 2;
  }
  try {
    run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parquet_write_tool: %s\n", e.what());
    return 1;
  }
  return 0;
}
