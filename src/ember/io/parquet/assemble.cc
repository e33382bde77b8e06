#include "ember/io/parquet/assemble.h"

#include <cstring>

#include "ember/core/error.h"

namespace ember::io::parquet {

namespace {

size_t value_width(const Node& leaf) { return fixed_width(leaf.type); }

// One step of a leaf's path: the schema node and the column being built for it.
struct Step {
  const Node* node;
  Column* col;
  bool primary;  // this leaf builds the node's validity/offsets (it is the node's first leaf)
};

// Appends leaf value `k` (or a null) to col.
class LeafSink {
 public:
  LeafSink(const Node& leaf, LeafData& data, const std::string& what)
      : data_(data), what_(what), width_(value_width(leaf)) {}

  void put(Column& col, bool valid) {
    if (!valid) {
      if (width_ > 0) col.values.insert(col.values.end(), width_, 0);
      else col.offsets.push_back(col.offsets.back());
      return;
    }
    if (next_ >= data_.num_values) fail_corrupt(what_ + ": levels reference more values than the pages hold");
    if (width_ > 0) {
      const uint8_t* src = data_.values.fixed.data() + size_t(next_) * width_;
      col.values.insert(col.values.end(), src, src + width_);
    } else {
      const auto& off = data_.values.offsets;
      col.values.insert(col.values.end(), data_.values.bytes.begin() + off[size_t(next_)],
                        data_.values.bytes.begin() + off[size_t(next_) + 1]);
      col.offsets.push_back(int64_t(col.values.size()));
    }
    ++next_;
  }
  int64_t consumed() const { return next_; }

 private:
  LeafData& data_;
  const std::string& what_;
  size_t width_;
  int64_t next_ = 0;
};

// A top-level primitive column: values straight from the chunk.
void assemble_flat(const Node& leaf, LeafData& d, Column& col, const std::string& what) {
  col.length = d.num_entries;
  int64_t nulls = 0;
  if (leaf.max_def > 0) {
    col.validity.resize(size_t(d.num_entries));
    for (int64_t i = 0; i < d.num_entries; ++i) {
      bool v = d.def[size_t(i)] == leaf.max_def;
      col.validity[size_t(i)] = v;
      nulls += !v;
    }
  }
  if (nulls == 0) {  // every slot present: the dense values are the column
    col.validity.clear();
    if (d.num_values != d.num_entries) fail_corrupt(what + ": value count differs from the level count");
    if (value_width(leaf) > 0) {
      col.values = std::move(d.values.fixed);
    } else {
      col.offsets = std::move(d.values.offsets);
      col.values = std::move(d.values.bytes);
    }
    return;
  }
  LeafSink sink(leaf, d, what);
  size_t w = value_width(leaf);
  if (w > 0) col.values.reserve(size_t(d.num_entries) * w);
  for (int64_t i = 0; i < d.num_entries; ++i) sink.put(col, col.validity[size_t(i)] != 0);
  if (sink.consumed() != d.num_values) fail_corrupt(what + ": pages hold more values than the levels use");
}

// General record assembly along one leaf's path (see schema.h for the levels).
void assemble_path(const std::vector<Step>& path, LeafData& d, const std::string& what) {
  const Node& leaf = *path.back().node;
  LeafSink sink(leaf, d, what);
  const size_t depth = path.size();
  for (int64_t e = 0; e < d.num_entries; ++e) {
    int16_t def = d.def.empty() ? 0 : d.def[size_t(e)];
    int16_t rep = d.rep.empty() ? 0 : d.rep[size_t(e)];
    if (e == 0 && rep != 0) fail_corrupt(what + ": first repetition level is " + std::to_string(rep) + ", expected 0");
    bool slot = rep == 0;
    for (size_t i = 0; i < depth; ++i) {
      const Step& s = path[i];
      if (i > 0) {
        const Node& parent = *path[i - 1].node;
        if (parent.type == TypeId::kList) {
          bool parent_slot = slot;
          slot = def >= parent.def_elem && rep <= parent.rep;
          if (slot && rep < parent.rep && !parent_slot)
            fail_corrupt(what + ": repetition level " + std::to_string(rep) + " continues a list that was not started");
          if (slot && path[i - 1].primary) ++path[i - 1].col->offsets.back();
        }
        // a struct's children have a slot exactly when the struct has one
      }
      if (!slot || !s.primary) continue;
      Column& c = *s.col;
      bool valid = def >= s.node->def_present;
      c.validity.push_back(valid);
      if (i + 1 == depth) sink.put(c, valid);
      else if (s.node->type == TypeId::kList) c.offsets.push_back(c.offsets.back());
      ++c.length;
    }
  }
  if (sink.consumed() != d.num_values)
    fail_corrupt(what + ": pages hold " + std::to_string(d.num_values) + " values, the levels use " +
                 std::to_string(sink.consumed()));
}

// Lists of lists ... of a primitive with every value present (no nulls, no empty lists): the
// dense values are the leaf column as they are, and each list's offsets follow from the
// repetition levels alone. The common shape of LeRobot's vector features.
bool try_assemble_dense_lists(const Node& node, LeafData& d, Column& col, const std::string& what) {
  std::vector<Column*> lists;
  std::vector<int16_t> reps;  // the repetition level of each list's elements
  const Node* n = &node;
  Column* c = &col;
  while (n->type == TypeId::kList) {
    lists.push_back(c);
    reps.push_back(n->rep);
    n = &n->children[0];
    c = &c->children[0];
  }
  if (lists.empty() || !n->children.empty() || d.rep.empty() || d.num_values != d.num_entries) return false;
  for (int16_t def : d.def)
    if (def != n->max_def) return false;
  if (d.rep[0] != 0) fail_corrupt(what + ": first repetition level is " + std::to_string(d.rep[0]) + ", expected 0");
  // a repetition level below a list's own starts a new list; one at or below it adds an element
  const size_t depth = lists.size();
  for (Column* l : lists) l->offsets.reserve(size_t(d.num_entries) + 1);
  if (depth == 1) {  // one list level: a list starts at every level-0 entry
    std::vector<int64_t>& off = lists[0]->offsets;
    off.clear();
    for (int64_t e = 0; e < d.num_entries; ++e)
      if (d.rep[size_t(e)] == 0) off.push_back(e);
    off.push_back(d.num_entries);
    lists[0]->length = int64_t(off.size()) - 1;
  }
  for (int64_t e = 0; depth > 1 && e < d.num_entries; ++e) {
    int16_t rep = d.rep[size_t(e)];
    for (size_t i = 0; i < depth; ++i) {
      Column& l = *lists[i];
      if (rep < reps[i]) {
        l.offsets.push_back(l.offsets.back());
        ++l.length;
      }
      if (rep <= reps[i]) ++l.offsets.back();
    }
  }
  c->length = d.num_entries;
  if (fixed_width(n->type) > 0) {
    c->values = std::move(d.values.fixed);
  } else {
    c->offsets = std::move(d.values.offsets);
    c->values = std::move(d.values.bytes);
  }
  return true;
}

// Drops all-valid validity vectors and checks the shape invariants the rest of ember relies on.
void finish(Column& c, const std::string& what) {
  if (!c.validity.empty()) {
    if (c.validity.size() != size_t(c.length)) fail_corrupt(what + ": column '" + c.name + "' has inconsistent nulls");
    bool any_null = false;
    for (uint8_t v : c.validity) any_null |= v == 0;
    if (!any_null) c.validity.clear();
  }
  size_t w = fixed_width(c.type);
  if (w > 0) {
    if (c.values.size() != size_t(c.length) * w) fail_corrupt(what + ": column '" + c.name + "' has inconsistent values");
    return;
  }
  if (c.type == TypeId::kStruct) {
    for (Column& k : c.children) {
      finish(k, what);
      if (k.length != c.length)
        fail_corrupt(what + ": struct column '" + c.name + "' field '" + k.name + "' has " + std::to_string(k.length) +
                     " rows, the struct " + std::to_string(c.length));
    }
    return;
  }
  if (c.offsets.size() != size_t(c.length) + 1 || c.offsets.front() != 0)
    fail_corrupt(what + ": column '" + c.name + "' has inconsistent offsets");
  if (c.type == TypeId::kList) {
    finish(c.children[0], what);
    if (c.offsets.back() != c.children[0].length)
      fail_corrupt(what + ": list column '" + c.name + "' has inconsistent element counts");
  } else if (c.offsets.back() != int64_t(c.values.size())) {
    fail_corrupt(what + ": column '" + c.name + "' has inconsistent byte offsets");
  }
}

}  // namespace

Column assemble(const Schema& schema, const Node& node, std::vector<LeafData>& leaves, int64_t num_rows,
                const std::string& what) {
  Column col = empty_column(node);
  if (node.num_leaves == 1 && node.children.empty()) {
    assemble_flat(node, leaves[0], col, what);
  } else if (node.num_leaves == 1 && try_assemble_dense_lists(node, leaves[0], col, what)) {
    // done
  } else {
    for (int k = 0; k < node.num_leaves; ++k) {
      const auto& nodes = schema.leaf_paths[size_t(node.first_leaf + k)];
      std::vector<Step> path;
      Column* c = &col;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (i > 0) c = &c->children[size_t(nodes[i] - nodes[i - 1]->children.data())];
        path.push_back({nodes[i], c, nodes[i]->first_leaf == node.first_leaf + k});
      }
      assemble_path(path, leaves[size_t(k)], what);
    }
  }
  if (col.length != num_rows)
    fail_corrupt(what + ": column '" + node.name + "' has " + std::to_string(col.length) + " rows, the row group " +
                 std::to_string(num_rows));
  finish(col, what);
  return col;
}

}  // namespace ember::io::parquet
