#include "ember/model/policy_inputs.h"

#include <algorithm>
#include <string>

#include "ember/core/error.h"

namespace ember::model {

namespace {

[[noreturn]] void bad_sample(size_t i, const std::string& what) {
  throw Error(ErrorKind::kInvalidArgument, "policy input: sample " + std::to_string(i) + ": " + what);
}

void check_sample(const PolicySample& s, size_t i, const PolicyShape& shape) {
  const int size = shape.vision.image_size;
  if (s.images.size() != s.camera_slots.size()) bad_sample(i, "images and camera_slots differ in length");
  if (int(s.images.size()) > shape.max_cameras)
    bad_sample(i, std::to_string(s.images.size()) + " cameras, the policy has " + std::to_string(shape.max_cameras) + " slots");
  std::vector<bool> used(shape.max_cameras, false);
  for (size_t c = 0; c < s.images.size(); ++c) {
    const auto& im = s.images[c];
    if (im.dim() != 3 || im.size(0) != 3 || im.size(1) != size || im.size(2) != size)
      bad_sample(i, "image " + std::to_string(c) + " is not [3, " + std::to_string(size) + ", " + std::to_string(size) + "]");
    int slot = s.camera_slots[c];
    if (slot < 0 || slot >= shape.max_cameras || used[slot]) bad_sample(i, "camera slot " + std::to_string(slot) + " is invalid or repeated");
    used[slot] = true;
  }
  if (s.embodiment < 0) bad_sample(i, "negative embodiment id");
  if (s.state.defined() && s.state.dim() > 1) bad_sample(i, "state is not [state_dim]");
  if (s.prompt.empty()) bad_sample(i, "empty prompt");
  if (int(s.prompt.size()) > shape.max_prompt)
    bad_sample(i, "prompt of " + std::to_string(s.prompt.size()) + " tokens, more than max_prompt " + std::to_string(shape.max_prompt));
  if (s.actions.defined()) {
    if (s.actions.dim() != 2 || s.actions.size(0) != shape.horizon || s.actions.size(1) > shape.max_action_dim)
      bad_sample(i, "action chunk is not [" + std::to_string(shape.horizon) + ", <= " + std::to_string(shape.max_action_dim) + "]");
    if (s.action_is_pad.defined() && s.action_is_pad.numel() != shape.horizon) bad_sample(i, "action_is_pad is not [H]");
  }
}

at::Tensor i64(const std::vector<int64_t>& v) { return at::tensor(v, at::kLong); }
at::Tensor i32_cumsum(const std::vector<int64_t>& lens) {
  std::vector<int32_t> cu(lens.size() + 1, 0);
  for (size_t i = 0; i < lens.size(); ++i) cu[i + 1] = cu[i] + int32_t(lens[i]);
  return at::tensor(cu, at::kInt);
}

// The images tensor [slots, 3, S, S] with slot k holding *sources[k] (nullptr: a blank image),
// copied on the options' pool when it has one.
at::Tensor layout_images(const std::vector<const at::Tensor*>& sources, int64_t size, const CollateOptions& options) {
  auto images = at::empty({int64_t(sources.size()), 3, size, size}, at::TensorOptions().dtype(at::kFloat).pinned_memory(options.pin_images));
  auto fill = [&](int64_t k) {
    at::Tensor slot = images[k];
    if (sources[size_t(k)]) slot.copy_(*sources[size_t(k)]);
    else slot.zero_();
  };
  if (options.pool && sources.size() > 1) {
    options.pool->parallel_for(int64_t(sources.size()), fill);
  } else {
    for (int64_t k = 0; k < int64_t(sources.size()); ++k) fill(k);
  }
  return images;
}

// the action chunks, zero-padded to max_action_dim, and the mask of the entries the loss counts
void collate_actions(std::span<const PolicySample* const> samples, const PolicyShape& shape, PolicyInputs& in) {
  const int64_t n = int64_t(samples.size()), h = shape.horizon, a = shape.max_action_dim;
  in.actions = at::zeros({n, h, a});
  in.action_mask = at::zeros({n, h, a});
  for (int64_t i = 0; i < n; ++i) {
    const auto& s = *samples[i];
    if (!s.actions.defined()) continue;
    int64_t dim = s.actions.size(1);
    in.actions[i].narrow(1, 0, dim).copy_(s.actions);
    auto valid = s.action_is_pad.defined() ? s.action_is_pad.to(at::kBool).logical_not().to(at::kFloat)
                                           : at::ones({h});
    in.action_mask[i].narrow(1, 0, dim).copy_(valid.unsqueeze(1).expand({h, dim}));
  }
}

// the states, zero-padded to the batch's widest, and the embodiment ids
void collate_state(std::span<const PolicySample* const> samples, PolicyInputs& in) {
  int64_t width = 0;
  for (const auto* s : samples) {
    in.embodiments.push_back(s->embodiment);
    if (s->state.defined()) width = std::max(width, s->state.numel());
  }
  in.embodiment = i64(in.embodiments);
  in.state = at::zeros({int64_t(samples.size()), width});
  for (size_t i = 0; i < samples.size(); ++i)
    if (samples[i]->state.defined() && samples[i]->state.numel() > 0)
      in.state[int64_t(i)].narrow(0, 0, samples[i]->state.numel()).copy_(samples[i]->state.reshape({-1}));
}

void collate_varlen(std::span<const PolicySample* const> samples, const PolicyShape& shape, const CollateOptions& options,
                    PolicyInputs& in) {
  const int64_t p = shape.vision.out_tokens(), h = shape.horizon;
  std::vector<const at::Tensor*> images;
  std::vector<int64_t> text, gather, prefix_pos, suffix_pos, lens_p, lens_s, joint;
  int64_t n_images = 0, n_text_total = 0;
  for (const auto* s : samples) {
    n_images += int64_t(s->images.size());
    n_text_total += int64_t(s->prompt.size());
  }
  int64_t text_row = n_images * p, image = 0, tp = 0;
  for (const auto* s : samples) {
    int64_t pos = 0;
    // cameras in slot order, as the padded layout places them (positions must agree)
    std::vector<size_t> order(s->images.size());
    for (size_t c = 0; c < order.size(); ++c) order[c] = c;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s->camera_slots[a] < s->camera_slots[b]; });
    for (size_t c : order) {
      images.push_back(&s->images[c]);
      for (int64_t j = 0; j < p; ++j) gather.push_back(image * p + j), prefix_pos.push_back(pos++);
      ++image;
    }
    for (int id : s->prompt) text.push_back(id), gather.push_back(text_row++), prefix_pos.push_back(pos++);
    for (int64_t j = 0; j < h; ++j) suffix_pos.push_back(pos + j);
    lens_p.push_back(pos);
    lens_s.push_back(h);
    tp += pos;
  }
  // filler: prompt tokens up to text_multiple (copies of the last one, each its own text row),
  // then prefix rows up to prefix_multiple (copies of the last text row's embedding); positions
  // from 0, one segment
  auto round_up = [](int64_t x, int64_t m) { return m > 1 ? (x + m - 1) / m * m : x; };
  const int64_t text_pad = round_up(n_text_total, options.text_multiple) - n_text_total;
  for (int64_t j = 0; j < text_pad; ++j) text.push_back(text.back()), gather.push_back(text_row++), prefix_pos.push_back(j);
  const int64_t pad = text_pad + round_up(tp + text_pad, options.prefix_multiple) - (tp + text_pad);
  for (int64_t j = text_pad; j < pad; ++j) gather.push_back(text_row - 1), prefix_pos.push_back(j);
  const int64_t rows = tp + pad;
  // joint keys of sample i: its prefix rows, then its suffix rows (offset by the prefix rows in
  // cat(prefix, suffix))
  int64_t op = 0, os = 0;
  for (size_t i = 0; i < lens_p.size(); ++i) {
    for (int64_t j = 0; j < lens_p[i]; ++j) joint.push_back(op + j);
    for (int64_t j = 0; j < lens_s[i]; ++j) joint.push_back(rows + os + j);
    op += lens_p[i];
    os += lens_s[i];
  }
  // with text_multiple the filler rows close the list (read by nobody: past cu_joint's last
  // segment), so that its length, too, depends on the prompts' total only to the multiple
  if (options.text_multiple > 1)
    for (int64_t j = 0; j < pad; ++j) joint.push_back(tp + j);
  in.images = layout_images(images, shape.vision.image_size, options);
  in.text_ids = i64(text);
  in.prefix_gather = i64(gather);
  in.prefix_positions = i64(prefix_pos);
  in.suffix_positions = i64(suffix_pos);
  in.real_prefix_tokens = tp;
  in.real_prefix_lens = lens_p;
  in.real_images = n_images;
  auto& plan = in.plan;
  plan.backend = AttentionBackend::kVarlen;
  plan.samples = int64_t(samples.size());
  std::vector<int64_t> lens_j(lens_p.size());
  for (size_t i = 0; i < lens_p.size(); ++i) lens_j[i] = lens_p[i] + lens_s[i];
  auto segments = lens_p;
  if (pad > 0) segments.push_back(pad);
  plan.cu_prefix = i32_cumsum(segments);
  plan.prefix_pad = pad;
  plan.cu_suffix = i32_cumsum(lens_s);
  plan.cu_joint = i32_cumsum(lens_j);
  plan.joint_index = i64(joint);
  plan.max_prefix = *std::max_element(segments.begin(), segments.end());
  plan.max_suffix = h;
  plan.max_joint = *std::max_element(lens_j.begin(), lens_j.end());
  plan.prefix_lens = lens_p;
  plan.suffix_lens = lens_s;
}

void collate_padded(std::span<const PolicySample* const> samples, const PolicyShape& shape, const CollateOptions& options,
                    PolicyInputs& in) {
  const int64_t n = int64_t(samples.size()), p = shape.vision.out_tokens(), h = shape.horizon;
  const int64_t cams = shape.max_cameras, lt = shape.max_prompt;
  const int64_t lp = cams * p + lt, l = lp + h;
  std::vector<const at::Tensor*> images(size_t(n * cams), nullptr);  // absent cameras: blank
  auto text = at::zeros({n * lt}, at::kLong);
  std::vector<int64_t> gather(n * lp), prefix_pos(n * lp), suffix_pos(n * h);
  auto valid = at::zeros({n, l}, at::kBool);
  auto valid_a = valid.accessor<bool, 2>();
  auto text_a = text.accessor<int64_t, 1>();
  int64_t real_prefix = 0, real_images = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto& sample = *samples[i];
    for (size_t c = 0; c < sample.images.size(); ++c) {
      int64_t slot = sample.camera_slots[c];
      images[size_t(i * cams + slot)] = &sample.images[c];
      for (int64_t j = 0; j < p; ++j) valid_a[i][slot * p + j] = true;
    }
    for (size_t j = 0; j < sample.prompt.size(); ++j) {
      text_a[i * lt + int64_t(j)] = sample.prompt[j];
      valid_a[i][cams * p + int64_t(j)] = true;
    }
    for (int64_t j = 0; j < h; ++j) valid_a[i][lp + j] = true;
    // prefix rows: image slots then prompt slots; positions count real tokens only
    int64_t pos = 0;
    for (int64_t j = 0; j < lp; ++j) {
      gather[i * lp + j] = j < cams * p ? (i * cams + j / p) * p + j % p : n * cams * p + i * lt + (j - cams * p);
      prefix_pos[i * lp + j] = valid_a[i][j] ? pos++ : 0;
    }
    for (int64_t j = 0; j < h; ++j) suffix_pos[i * h + j] = pos + j;
    real_prefix += pos;
    in.real_prefix_lens.push_back(pos);
    real_images += int64_t(sample.images.size());
  }
  in.images = layout_images(images, shape.vision.image_size, options);
  in.text_ids = text;
  in.prefix_gather = i64(gather);
  in.prefix_positions = i64(prefix_pos);
  in.suffix_positions = i64(suffix_pos);
  in.real_prefix_tokens = real_prefix;
  in.real_images = real_images;
  auto& plan = in.plan;
  plan.backend = AttentionBackend::kPadded;
  plan.samples = n;
  plan.prefix_len = lp;
  plan.suffix_len = h;
  plan.valid = valid;  // the mask is made from it on the model's device (AttentionPlan::with_mask)
}

}  // namespace

PolicyInputs collate(std::span<const PolicySample* const> samples, const PolicyShape& shape, AttentionBackend backend,
                     const CollateOptions& options) {
  if (samples.empty()) throw Error(ErrorKind::kInvalidArgument, "policy input: empty batch");
  for (size_t i = 0; i < samples.size(); ++i) check_sample(*samples[i], i, shape);
  PolicyInputs in;
  in.samples = int64_t(samples.size());
  if (backend == AttentionBackend::kVarlen) {
    collate_varlen(samples, shape, options, in);
  } else {
    collate_padded(samples, shape, options, in);
  }
  collate_actions(samples, shape, in);
  collate_state(samples, in);
  return in;
}

std::vector<at::Tensor*> PolicyInputs::tensors() {
  return {&images, &text_ids, &prefix_gather, &prefix_positions, &suffix_positions, &actions, &action_mask, &state,
          &embodiment, &plan.cu_prefix, &plan.cu_suffix, &plan.cu_joint, &plan.joint_index, &plan.valid, &plan.mask};
}

std::vector<const at::Tensor*> PolicyInputs::tensors() const {
  auto all = const_cast<PolicyInputs*>(this)->tensors();
  return {all.begin(), all.end()};
}

PolicyInputs PolicyInputs::to(const at::Device& device) const {
  PolicyInputs out = *this;
  for (at::Tensor* t : out.tensors())
    if (t->defined()) *t = t->to(device, /*non_blocking=*/true);
  return out;
}

std::string PolicyInputs::shape_key() const {
  std::string key;
  for (const at::Tensor* t : tensors()) {
    if (t->defined())
      for (int64_t d : t->sizes()) key += std::to_string(d) + ",";
    key += ";";
  }
  return key;
}

PolicyInputs PolicyInputs::pin_memory() const {
  PolicyInputs out = *this;
  for (at::Tensor* t : out.tensors())
    if (t->defined() && !t->is_pinned()) *t = t->pin_memory();
  return out;
}

PolicyInputs with_suffix_copies(const PolicyInputs& in, int64_t copies) {
  const AttentionPlan& p = in.plan;
  if (p.backend != AttentionBackend::kVarlen)
    throw Error(ErrorKind::kInternal, "with_suffix_copies: the varlen layout only");
  if (copies < 1) throw Error(ErrorKind::kInternal, "with_suffix_copies: copies must be >= 1");
  if (copies == 1) return in;
  const int64_t n = in.samples, tp = in.prefix_rows(), ts = in.suffix_positions.size(0);
  const int64_t tj = p.joint_index.size(0);
  // cu [n+1] of one copy -> [copies*n+1]: copy j's segments shifted by j * total
  auto repeat_cu = [&](const at::Tensor& cu, int64_t total) {
    auto body = cu.narrow(0, 0, n).to(at::kLong);
    std::vector<at::Tensor> parts;
    for (int64_t j = 0; j < copies; ++j) parts.push_back(body + j * total);
    parts.push_back(at::full({1}, copies * total, body.options()));
    return at::cat(parts).to(cu.scalar_type());
  };
  PolicyInputs out = in;
  out.samples = n * copies;
  out.actions = out.action_mask = out.state = at::Tensor();
  out.suffix_positions = in.suffix_positions.repeat({copies});
  out.embodiment = in.embodiment.defined() ? in.embodiment.repeat({copies}) : at::Tensor();
  out.embodiments.clear();
  for (int64_t j = 0; j < copies; ++j) out.embodiments.insert(out.embodiments.end(), in.embodiments.begin(), in.embodiments.end());
  AttentionPlan& q = out.plan;
  q.samples = n * copies;
  q.cu_suffix = repeat_cu(p.cu_suffix, ts);
  q.cu_joint = repeat_cu(p.cu_joint, tj);
  // joint keys index cat(prefix [tp], suffix copies [copies * ts]): prefix rows stay, copy j's
  // suffix rows move by j * ts
  auto is_suffix = p.joint_index.ge(tp).to(p.joint_index.scalar_type());
  std::vector<at::Tensor> index;
  for (int64_t j = 0; j < copies; ++j) index.push_back(p.joint_index + is_suffix * (j * ts));
  q.joint_index = at::cat(index);
  q.cu_prefix = at::Tensor();  // no prefix pass may read it
  std::vector<int64_t> prefix_lens, suffix_lens;
  for (int64_t j = 0; j < copies; ++j) {
    prefix_lens.insert(prefix_lens.end(), p.prefix_lens.begin(), p.prefix_lens.end());
    suffix_lens.insert(suffix_lens.end(), p.suffix_lens.begin(), p.suffix_lens.end());
  }
  q.prefix_lens = std::move(prefix_lens);
  q.suffix_lens = std::move(suffix_lens);
  return out;
}

at::Tensor segment_means(const at::Tensor& rows, const at::Tensor& cu, int64_t n) {
  if (cu.dim() != 1 || cu.size(0) < n + 1) throw Error(ErrorKind::kInternal, "segment_means: fewer than n + 1 offsets");
  auto offsets = cu.narrow(0, 0, n + 1).to(at::kLong);
  // each row's segment (rows past cu[n]: n, dropped)
  auto ids = at::searchsorted(offsets.narrow(0, 1, n), at::arange(rows.size(0), offsets.options()), /*out_int32=*/false, /*right=*/true);
  auto sum = at::zeros({n + 1, rows.size(1)}, rows.options()).index_add_(0, ids, rows).narrow(0, 0, n);
  auto lens = (offsets.narrow(0, 1, n) - offsets.narrow(0, 0, n)).clamp_min(1);
  return sum * lens.to(rows.scalar_type()).reciprocal().unsqueeze(1);
}

}  // namespace ember::model
