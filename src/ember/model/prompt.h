// pi0.5's language prefix: the task and the discretised robot state as text, tokenised.
// Matches openpi's PaligemmaTokenizer.tokenize(prompt, state) (the pi0.5 branch), so a policy
// fine-tuned from openpi's pi0.5 checkpoints sees the prompt it was trained on.
//
// Exact format (one string, then tokenised with the bos token in front):
//
//   "Task: " + clean_task(task) + ", State: " + s_0 + " " + s_1 + ... + " " + s_{n-1}
//       + ";\nAction: "
//
// where s_i = discretize_state(state)[i] written in decimal, and
//   clean_task: strip leading/trailing whitespace, then replace each '_' and each '\n' by ' '
//               (no lower-casing: that is openpi's FAST tokenizer, not pi0.5's).
// Example: task " pick_up the cube\n", state {-1, 0, 1} gives
//   "Task: pick up the cube, State: 0 128 255;\nAction: "
// An empty state gives "..., State: ;\nAction: " as openpi does.
//
// All functions are pure and thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/model/tokenizer.h"

namespace ember::model {

inline constexpr int kStateBins = 256;

// Bins of a normalised state value: bin k covers [-1 + k/128, -1 + (k+1)/128), i.e. openpi's
// np.digitize(x, np.linspace(-1, 1, 257)[:-1]) - 1, with edges compared exactly. Values >= 1
// fall in bin 255 (as in openpi); values < -1 clamp to bin 0 (openpi would give -1, a token
// string the model never saw in training), unless `lerobot_bins` (LeRobot's pi05 processor,
// for policies imported from LeRobot): then they give -1 as numpy does. Throws Error
// kInvalidArgument naming the index for NaN.
// state is (state_dim), normalised to about [-1, 1]; returns (state_dim) ints in [0, 255]
// ([-1, 255] with lerobot_bins).
std::vector<int> discretize_state(std::span<const float> state, bool lerobot_bins = false);

// The task string cleaned as openpi does (see the format above). Whitespace here is ASCII
// whitespace (" \t\n\r\v\f"); Python's strip() also strips Unicode spaces, which ember keeps.
std::string clean_task(std::string_view task);

// The full prompt text in the format above. state is (state_dim).
std::string pi05_prompt_text(std::string_view task, std::span<const float> state, bool lerobot_bins = false);

struct PromptTokens {
  std::vector<int> ids;  // (num_tokens): bos, then the prompt's tokens; no padding
  int num_tokens = 0;    // ids.size(), <= max_tokens
  int full_tokens = 0;   // the length before truncation; > num_tokens when it was truncated
  bool truncated() const { return full_tokens > num_tokens; }
};

// Tokenises pi05_prompt_text with bos in front (when the tokenizer has one). Truncation rule,
// as in openpi: when the prompt is longer than max_tokens, the first max_tokens tokens are kept
// and the rest dropped (the tail, i.e. the state and "Action: ", goes first); full_tokens
// tells the caller so it can warn. Throws Error kInvalidArgument if max_tokens < 1.
PromptTokens pi05_prompt_tokens(const Tokenizer& tokenizer, std::string_view task,
                                std::span<const float> state, int max_tokens, bool lerobot_bins = false);

// The task alone, clean_task(task), tokenised the same way (bos, truncation): GR00T-N1.5's
// language input, which holds no state (the state enters as its own token).
PromptTokens task_prompt_tokens(const Tokenizer& tokenizer, std::string_view task, int max_tokens);

}  // namespace ember::model
