#include "ember/io/parquet/shred.h"

#include <algorithm>

#include "ember/core/error.h"

namespace ember::io::parquet {

namespace {

[[noreturn]] void bad(const std::string& what, const std::string& path, const std::string& why) {
  fail(ErrorKind::kInvalidArgument, what + ": column '" + path + "': " + why);
}

// Sizes and offsets, so that shredding never reads outside a column's vectors.
void check_shape(const Column& c, const std::string& what, const std::string& path) {
  auto n = [](auto v) { return std::to_string(v); };
  if (c.length < 0) bad(what, path, "length is " + n(c.length));
  if (!c.validity.empty() && c.validity.size() != size_t(c.length))
    bad(what, path, "validity has " + n(c.validity.size()) + " entries, expected " + n(c.length));
  if (size_t w = fixed_width(c.type); w > 0) {
    if (c.values.size() != size_t(c.length) * w)
      bad(what, path, "values hold " + n(c.values.size()) + " bytes, expected " + n(size_t(c.length) * w));
    return;
  }
  if (c.type == TypeId::kStruct) {
    if (c.children.empty()) bad(what, path, "a struct needs at least one field (Parquet has no empty groups)");
    for (const Column& f : c.children) {
      if (f.length != c.length)
        bad(what, path, "field '" + f.name + "' has " + n(f.length) + " rows, the struct " + n(c.length));
      check_shape(f, what, path + "." + f.name);
    }
    return;
  }
  // string, binary and list: offsets [length + 1], non-decreasing (none at all for no rows)
  if (!(c.offsets.empty() && c.length == 0)) {
    if (c.offsets.size() != size_t(c.length) + 1)
      bad(what, path, "offsets have " + n(c.offsets.size()) + " entries, expected " + n(c.length + 1));
    if (c.offsets[0] < 0) bad(what, path, "offsets start at " + n(c.offsets[0]));
    for (size_t i = 0; i + 1 < c.offsets.size(); ++i)
      if (c.offsets[i + 1] < c.offsets[i]) bad(what, path, "offsets decrease at slot " + n(i));
  }
  int64_t end = c.offsets.empty() ? 0 : c.offsets.back();
  if (c.type != TypeId::kList) {
    if (end > int64_t(c.values.size()))
      bad(what, path, "offsets end at " + n(end) + " but values hold " + n(c.values.size()) + " bytes");
    return;
  }
  if (c.children.size() != 1) bad(what, path, "a list needs exactly one child, has " + n(c.children.size()));
  const Column& e = c.children[0];
  if (end > e.length) bad(what, path, "offsets end at " + n(end) + " but the element column has " + n(e.length) + " rows");
  check_shape(e, what, path + "." + e.name);
}

// Whether a non-nullable node below (or at) c holds a null somewhere; only then is the
// slot-by-slot walk of check_nulls needed.
bool may_hold_bad_null(const Column& c) {
  if (!c.nullable && c.null_count() > 0) return true;
  for (const Column& k : c.children)
    if (may_hold_bad_null(k)) return true;
  return false;
}

// Nulls in non-nullable slots are only an error where they would be written: a slot under
// a null parent is never visited (the reader produces such slots itself).
void check_nulls(const Column& c, int64_t slot, const std::string& what, const std::string& path) {
  if (!c.is_valid(slot)) {
    if (!c.nullable) bad(what, path, "is not nullable but slot " + std::to_string(slot) + " is null");
    return;
  }
  if (c.type == TypeId::kStruct) {
    for (const Column& f : c.children) check_nulls(f, slot, what, path + "." + f.name);
  } else if (c.type == TypeId::kList) {
    for (int64_t k = c.offsets[size_t(slot)]; k < c.offsets[size_t(slot) + 1]; ++k)
      check_nulls(c.children[0], k, what, path + "." + c.children[0].name);
  }
}

// Shreds one leaf along its path from the top-level column.
class Shredder {
 public:
  Shredder(const std::vector<const Column*>& path, const std::vector<std::string>& names) : path_(path) {
    out_.leaf = path.back();
    out_.path = names;
    for (const Column* c : path) {
      out_.max_def = int16_t(out_.max_def + (c->nullable ? 1 : 0) + (c->type == TypeId::kList ? 1 : 0));
      if (c->type == TypeId::kList) ++out_.max_rep;
      list_rep_.push_back(out_.max_rep);
    }
  }

  ShreddedLeaf run() && {
    const Column& top = *path_[0];
    // about one entry per leaf slot (plus nulls and empty lists above it)
    size_t guess = size_t(std::max(out_.leaf->length, top.length));
    out_.slots.reserve(guess);
    if (out_.max_def > 0) out_.def.reserve(guess);
    if (out_.max_rep > 0) out_.rep.reserve(guess);
    for (int64_t r = 0; r < top.length; ++r) visit(0, r, 0, 0);
    return std::move(out_);
  }

 private:
  // Emits the entries of slot `slot` of path_[d]; `def` is the level its parents reached,
  // `rep` the repetition level of its first entry.
  void visit(size_t d, int64_t slot, int16_t def, int16_t rep) {
    const Column& c = *path_[d];
    if (c.nullable) {
      if (!c.is_valid(slot)) return emit(def, rep);
      ++def;
    }
    if (d + 1 == path_.size()) {
      emit(def, rep);
      out_.slots.push_back(slot);
      return;
    }
    if (c.type == TypeId::kStruct) return visit(d + 1, slot, def, rep);
    // a list: an empty one is one entry at its own level; elements repeat at the list's level
    int64_t lo = c.offsets[size_t(slot)], hi = c.offsets[size_t(slot) + 1];
    if (lo == hi) return emit(def, rep);
    for (int64_t k = lo; k < hi; ++k) visit(d + 1, k, int16_t(def + 1), k == lo ? rep : list_rep_[d]);
  }

  void emit(int16_t def, int16_t rep) {
    if (out_.max_def > 0) out_.def.push_back(def);
    if (out_.max_rep > 0) out_.rep.push_back(rep);
    ++out_.num_entries;
  }

  const std::vector<const Column*>& path_;
  std::vector<int16_t> list_rep_;  // [depth] repetition level of the elements of a list at that depth
  ShreddedLeaf out_;
};

void collect(const Column& c, std::vector<const Column*>& path, std::vector<std::string>& names,
             std::vector<ShreddedLeaf>& out) {
  path.push_back(&c);
  names.push_back(c.name);
  if (c.type == TypeId::kList) {
    names.push_back("list");  // the repeated group of the 3-level LIST layout
    collect(c.children[0], path, names, out);
    names.pop_back();
  } else if (c.type == TypeId::kStruct) {
    for (const Column& f : c.children) collect(f, path, names, out);
  } else {
    out.push_back(Shredder(path, names).run());
  }
  names.pop_back();
  path.pop_back();
}

}  // namespace

void check_column(const Column& c, const std::string& what) {
  check_shape(c, what, c.name);
  if (may_hold_bad_null(c))
    for (int64_t r = 0; r < c.length; ++r) check_nulls(c, r, what, c.name);
}

std::vector<ShreddedLeaf> shred(const Column& c) {
  std::vector<ShreddedLeaf> out;
  std::vector<const Column*> path;
  std::vector<std::string> names;
  collect(c, path, names, out);
  return out;
}

}  // namespace ember::io::parquet
