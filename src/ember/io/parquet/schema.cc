#include "ember/io/parquet/schema.h"

#include "ember/core/error.h"

namespace ember::io::parquet {

namespace {

constexpr int kMaxNesting = 32;

struct Tree {
  const SchemaElement* e = nullptr;
  std::vector<Tree> kids;
};

Tree parse_tree(const std::vector<SchemaElement>& els, size_t& i, int depth, const std::string& what) {
  if (depth > kMaxNesting) fail_corrupt(what + ": schema nested deeper than " + std::to_string(kMaxNesting));
  if (i >= els.size()) fail_corrupt(what + ": schema ends early (num_children counts more elements than there are)");
  Tree t;
  t.e = &els[i++];
  int32_t n = t.e->type ? 0 : t.e->num_children;
  if (n < 0 || size_t(n) > els.size() - i)
    fail_corrupt(what + ": schema element '" + t.e->name + "' has num_children " + std::to_string(n) +
                 " but only " + std::to_string(els.size() - i) + " elements follow");
  for (int32_t k = 0; k < n; ++k) t.kids.push_back(parse_tree(els, i, depth + 1, what));
  return t;
}

const char* annotation_name(const SchemaElement& e) {
  switch (e.logical_type) {
    case kLogicalString: return "STRING";
    case kLogicalMap: return "MAP";
    case kLogicalList: return "LIST";
    case kLogicalEnum: return "ENUM";
    case kLogicalDecimal: return "DECIMAL";
    case kLogicalDate: return "DATE";
    case kLogicalTime: return "TIME";
    case kLogicalTimestamp: return "TIMESTAMP";
    case kLogicalInteger: return "INTEGER";
    case kLogicalUnknown: return "UNKNOWN";
    case kLogicalJson: return "JSON";
    case kLogicalBson: return "BSON";
    case kLogicalUuid: return "UUID";
    case kLogicalFloat16: return "FLOAT16";
    case kLogicalVariant: return "VARIANT";
    case kLogicalGeometry: return "GEOMETRY";
    case kLogicalGeography: return "GEOGRAPHY";
    default: break;
  }
  if (!e.converted_type) return "none";
  switch (*e.converted_type) {
    case kUtf8: return "UTF8";
    case kMap: return "MAP";
    case kMapKeyValue: return "MAP_KEY_VALUE";
    case kList: return "LIST";
    case kEnum: return "ENUM";
    case kDecimal: return "DECIMAL";
    case kDate: return "DATE";
    case kTimeMillis: return "TIME_MILLIS";
    case kTimeMicros: return "TIME_MICROS";
    case kTimestampMillis: return "TIMESTAMP_MILLIS";
    case kTimestampMicros: return "TIMESTAMP_MICROS";
    case kUint8: return "UINT_8";
    case kUint16: return "UINT_16";
    case kUint32: return "UINT_32";
    case kUint64: return "UINT_64";
    case kInt8: return "INT_8";
    case kInt16: return "INT_16";
    case kInt32: return "INT_32";
    case kInt64: return "INT_64";
    case kJson: return "JSON";
    case kBson: return "BSON";
    case kInterval: return "INTERVAL";
    default: return "unknown";
  }
}

bool has(const SchemaElement& e, int32_t logical, int32_t converted) {
  return e.logical_type == logical || (e.logical_type == kLogicalNone && e.converted_type == converted);
}
bool no_annotation(const SchemaElement& e) {
  return e.logical_type == kLogicalNone && !e.converted_type;
}

class Builder {
 public:
  explicit Builder(const std::string& what) : what_(what) {}

  Node convert(const Tree& t, int16_t pdef, int16_t prep, bool is_repeated_element, const std::string& path) {
    const SchemaElement& e = *t.e;
    Repetition r = e.repetition.value_or(Repetition::kRequired);
    if (r == Repetition::kRepeated && !is_repeated_element) {
      // a bare repeated field: a list of required elements that is never null
      Node list;
      list.name = e.name;
      list.type = TypeId::kList;
      list.nullable = false;
      list.def_present = pdef;
      list.def_elem = int16_t(pdef + 1);
      list.rep = int16_t(prep + 1);
      list.children.push_back(convert(t, pdef, prep, true, path));
      return list;
    }
    int16_t def = int16_t(pdef + (r != Repetition::kRequired ? 1 : 0));
    int16_t rep = int16_t(prep + (r == Repetition::kRepeated ? 1 : 0));
    Node n;
    n.name = e.name;
    n.nullable = r == Repetition::kOptional;
    n.def_present = def;
    if (e.type) {
      leaf(n, e, path);
      n.max_def = def;
      n.max_rep = rep;
      return n;
    }
    if (has(e, kLogicalMap, kMap) || has(e, kLogicalMap, kMapKeyValue))
      unsupported(path, "MAP columns are not supported");
    if (has(e, kLogicalList, kList)) {
      if (t.kids.size() != 1) fail_corrupt(what_ + ": column '" + path + "': LIST group has " + std::to_string(t.kids.size()) + " children, expected 1");
      const Tree& rt = t.kids[0];
      if (rt.e->repetition != Repetition::kRepeated)
        fail_corrupt(what_ + ": column '" + path + "': the child of a LIST group is not repeated");
      n.type = TypeId::kList;
      n.def_elem = int16_t(def + 1);
      n.rep = int16_t(rep + 1);
      bool two_level = rt.e->type || rt.kids.size() != 1 || rt.e->name == "array" || rt.e->name == e.name + "_tuple";
      if (two_level) n.children.push_back(convert(rt, def, rep, true, path + "." + rt.e->name));
      else n.children.push_back(convert(rt.kids[0], n.def_elem, n.rep, false, path + "." + rt.e->name + "." + rt.kids[0].e->name));
      return n;
    }
    if (t.kids.empty()) unsupported(path, "empty group");
    n.type = TypeId::kStruct;
    for (const Tree& k : t.kids) n.children.push_back(convert(k, def, rep, false, path + "." + k.e->name));
    return n;
  }

 private:
  [[noreturn]] void unsupported(const std::string& path, const std::string& why) {
    fail_unsupported(what_ + ": column '" + path + "': " + why);
  }
  [[noreturn]] void unsupported_type(const std::string& path, const SchemaElement& e) {
    unsupported(path, std::string("type ") + physical_type_name(*e.type) + " with annotation " + annotation_name(e) +
                          " is not supported (ember reads bool, int8-64, uint8-32, float, double, string, binary)");
  }

  void leaf(Node& n, const SchemaElement& e, const std::string& path) {
    n.physical = *e.type;
    n.type_length = e.type_length;
    bool int_logical = e.logical_type == kLogicalInteger;
    switch (*e.type) {
      case PhysicalType::kBoolean:
        if (!no_annotation(e)) unsupported_type(path, e);
        n.type = TypeId::kBool;
        return;
      case PhysicalType::kInt32: {
        int32_t ct = e.converted_type.value_or(-1);
        bool plain = no_annotation(e) || (int_logical && e.int_signed) ||
                     (!int_logical && e.logical_type == kLogicalNone && (ct == kInt8 || ct == kInt16 || ct == kInt32));
        bool small_unsigned = (int_logical && !e.int_signed && e.int_bit_width <= 16) ||
                              (!int_logical && e.logical_type == kLogicalNone && (ct == kUint8 || ct == kUint16));
        bool u32 = (int_logical && !e.int_signed && e.int_bit_width == 32) ||
                   (!int_logical && e.logical_type == kLogicalNone && ct == kUint32);
        if (plain || small_unsigned) { n.type = TypeId::kInt32; return; }
        if (u32) { n.type = TypeId::kInt64; n.widen_uint32 = true; return; }
        unsupported_type(path, e);
      }
      case PhysicalType::kInt64:
        if (no_annotation(e) || (int_logical && e.int_signed) ||
            (e.logical_type == kLogicalNone && e.converted_type == kInt64)) {
          n.type = TypeId::kInt64;
          return;
        }
        unsupported_type(path, e);
      case PhysicalType::kFloat:
        if (!no_annotation(e)) unsupported_type(path, e);
        n.type = TypeId::kFloat;
        return;
      case PhysicalType::kDouble:
        if (!no_annotation(e)) unsupported_type(path, e);
        n.type = TypeId::kDouble;
        return;
      case PhysicalType::kByteArray:
        if (has(e, kLogicalString, kUtf8) || has(e, kLogicalEnum, kEnum) || has(e, kLogicalJson, kJson)) {
          n.type = TypeId::kString;
          return;
        }
        if (no_annotation(e) || has(e, kLogicalBson, kBson)) {
          n.type = TypeId::kBinary;
          return;
        }
        unsupported_type(path, e);
      case PhysicalType::kFixedLenByteArray:
        if (!no_annotation(e)) unsupported_type(path, e);
        if (e.type_length <= 0) fail_corrupt(what_ + ": column '" + path + "': FIXED_LEN_BYTE_ARRAY with type_length " + std::to_string(e.type_length));
        n.type = TypeId::kBinary;
        return;
      case PhysicalType::kInt96:
        unsupported_type(path, e);
    }
    fail_corrupt(what_ + ": column '" + path + "': unknown physical type " + std::to_string(int(*e.type)));
  }

  const std::string& what_;
};

void index_leaves(Node& n, Schema& s, std::vector<const Node*>& path) {
  path.push_back(&n);
  if (n.children.empty()) {
    n.leaf_index = int(s.leaves.size());
    n.first_leaf = n.leaf_index;
    n.num_leaves = 1;
    s.leaves.push_back(&n);
    s.leaf_paths.push_back(path);
  } else {
    n.first_leaf = int(s.leaves.size());
    for (Node& c : n.children) index_leaves(c, s, path);
    n.num_leaves = int(s.leaves.size()) - n.first_leaf;
  }
  path.pop_back();
}

}  // namespace

std::unique_ptr<Schema> build_schema(const std::vector<SchemaElement>& elements, const std::string& what) {
  if (elements.empty()) fail_corrupt(what + ": footer has an empty schema");
  if (elements[0].type) fail_corrupt(what + ": the schema's root is not a group");
  size_t i = 0;
  Tree root = parse_tree(elements, i, 0, what);
  if (i != elements.size())
    fail_corrupt(what + ": schema has " + std::to_string(elements.size() - i) + " elements outside the root");
  auto schema = std::make_unique<Schema>();
  Builder b(what);
  for (const Tree& k : root.kids) schema->fields.push_back(b.convert(k, 0, 0, false, k.e->name));
  std::vector<const Node*> path;
  for (Node& f : schema->fields) index_leaves(f, *schema, path);
  return schema;
}

Column empty_column(const Node& node) {
  Column c;
  c.name = node.name;
  c.type = node.type;
  c.nullable = node.nullable;
  if (node.type == TypeId::kList || node.type == TypeId::kString || node.type == TypeId::kBinary) c.offsets.push_back(0);
  for (const Node& k : node.children) c.children.push_back(empty_column(k));
  return c;
}

}  // namespace ember::io::parquet
