#include "ember/model/prompt.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "ember/core/error.h"

namespace ember::model {
namespace {

// The left edges of the 256 bins, -1 + k/128: exact in double, like numpy's linspace here.
const std::array<double, kStateBins>& bin_edges() {
  static const std::array<double, kStateBins> edges = [] {
    std::array<double, kStateBins> e{};
    for (int k = 0; k < kStateBins; ++k) e[k] = -1.0 + k * (2.0 / kStateBins);
    return e;
  }();
  return edges;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

std::vector<int> discretize_state(std::span<const float> state, bool lerobot_bins) {
  const auto& edges = bin_edges();
  std::vector<int> bins(state.size());
  for (size_t i = 0; i < state.size(); ++i) {
    const double x = state[i];
    if (std::isnan(x)) {
      fail(ErrorKind::kInvalidArgument,
           "state[" + std::to_string(i) + "] is NaN; expected a normalised value in [-1, 1]");
    }
    // np.digitize: the number of edges <= x, minus one (-1 below -1); ember clamps that to 0
    int k = static_cast<int>(std::upper_bound(edges.begin(), edges.end(), x) - edges.begin()) - 1;
    bins[i] = lerobot_bins ? k : std::max(k, 0);
  }
  return bins;
}

std::string clean_task(std::string_view task) {
  size_t begin = 0, end = task.size();
  while (begin < end && is_space(task[begin])) ++begin;
  while (end > begin && is_space(task[end - 1])) --end;
  std::string cleaned(task.substr(begin, end - begin));
  std::replace(cleaned.begin(), cleaned.end(), '_', ' ');
  std::replace(cleaned.begin(), cleaned.end(), '\n', ' ');
  return cleaned;
}

std::string pi05_prompt_text(std::string_view task, std::span<const float> state, bool lerobot_bins) {
  std::string text = "Task: " + clean_task(task) + ", State: ";
  std::vector<int> bins = discretize_state(state, lerobot_bins);
  for (size_t i = 0; i < bins.size(); ++i) {
    if (i > 0) text += ' ';
    text += std::to_string(bins[i]);
  }
  text += ";\nAction: ";
  return text;
}

namespace {

PromptTokens tokens_of(const Tokenizer& tokenizer, const std::string& text, int max_tokens) {
  if (max_tokens < 1) {
    fail(ErrorKind::kInvalidArgument,
         "prompt max_tokens is " + std::to_string(max_tokens) + "; expected at least 1");
  }
  PromptTokens out;
  if (tokenizer.bos_id() >= 0) out.ids.push_back(tokenizer.bos_id());
  std::vector<int> body = tokenizer.encode(text);
  out.ids.insert(out.ids.end(), body.begin(), body.end());
  out.full_tokens = static_cast<int>(out.ids.size());
  if (out.ids.size() > static_cast<size_t>(max_tokens)) out.ids.resize(max_tokens);
  out.num_tokens = static_cast<int>(out.ids.size());
  return out;
}

}  // namespace

PromptTokens pi05_prompt_tokens(const Tokenizer& tokenizer, std::string_view task,
                                std::span<const float> state, int max_tokens, bool lerobot_bins) {
  return tokens_of(tokenizer, pi05_prompt_text(task, state, lerobot_bins), max_tokens);
}

PromptTokens task_prompt_tokens(const Tokenizer& tokenizer, std::string_view task, int max_tokens) {
  return tokens_of(tokenizer, clean_task(task), max_tokens);
}

}  // namespace ember::model
