// Tasks and suites. A task is a family (what the expert does and how success is judged), the
// objects it uses, a language instruction, a step limit and a way to draw initial states.
// Suites: "ember10" (10 tasks in 4 families: pick-and-place into the tray, push onto the pad,
// stack, press a button; four cube colours, two button colours) and "easy" (one task, small
// placement ranges, for ember demo's few-minute training).
//
// Initial states are drawn from a splitmix64 stream seeded by the task's name. The 50
// evaluation states of each task are also frozen in assets/sim/init_states/<task>.json (as
// LIBERO keeps its init states in files) and read from there when the file exists, so a later
// change to the sampling code cannot move them; `ember sim export_init_states` writes them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::sim {

enum class Family { kPickPlace, kPush, kStack, kPress };
const char* family_name(Family f);

struct TaskSpec {
  std::string name;         // e.g. "pick_red_into_tray"
  std::string instruction;  // e.g. "put the red cube in the tray"
  Family family = Family::kPickPlace;
  std::string object;       // the manipulated body: "cube_red", or the button "button_red"
  std::string target;       // "tray", "pad", the lower cube of a stack, or "" (buttons)
  std::vector<std::string> distractors;  // other cubes or buttons on the table
  int max_steps = 200;      // control steps (20 Hz) before the episode is truncated
  double spread = 1.0;      // scale of the placement ranges (easy tasks: smaller)
  // > 0: LIBERO-style placement. The task has one fixed layout (drawn once from its name) and
  // each initial state moves every body by up to +-jitter metres in x and y around it.
  // 0: every body drawn anywhere in the spread-scaled table region.
  double jitter = 0.0;
};

// Where one body starts: cubes (free joints) and fixtures (mocap bodies) alike.
struct Placement {
  std::string body;
  double x = 0, y = 0, yaw = 0;
};
struct InitState {
  std::vector<Placement> items;
};

struct Suite {
  std::string name;
  std::vector<TaskSpec> tasks;
};

inline constexpr int kEvalInitStates = 50;

// The suite of that name; throws Error kInvalidArgument "--suite: unknown suite ..." listing
// the known ones.
const Suite& find_suite(std::string_view name);
// The suite's tasks named in `names` (in that order), or all of them when `names` is empty.
// Throws kInvalidArgument naming --task for a name the suite lacks.
std::vector<const TaskSpec*> select_tasks(const Suite& suite, const std::vector<std::string>& names);
std::vector<std::string> suite_names();
// A task of any suite by name; throws kInvalidArgument "--task: unknown task ..." listing them.
const TaskSpec& find_task(std::string_view name);

// `count` initial states of the task from the stream seeded by (task name, seed). seed 0 gives
// the evaluation states; demonstrations use other seeds so that evaluation is on unseen states.
std::vector<InitState> make_init_states(const TaskSpec& task, int count, uint64_t seed);
// The task's kEvalInitStates fixed evaluation states: from <asset dir>/init_states/<task>.json
// when it exists, else make_init_states(task, 50, 0). Cached; thread-safe. Throws kCorruption
// naming the file when it does not hold 50 states of the task's bodies.
const std::vector<InitState>& eval_init_states(const TaskSpec& task);
// Writes make_init_states(task, 50, 0) as JSON into dir/<task>.json (atomically).
void export_init_states(const TaskSpec& task, const std::string& dir);

// splitmix64: ember's documented PRNG for everything seeded in sim.
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform(double lo = 0, double hi = 1) { return lo + (hi - lo) * double(next() >> 11) * 0x1.0p-53; }
  double normal();  // standard normal (Box-Muller)
};
uint64_t hash_string(const std::string& s);  // FNV-1a 64
uint64_t mix_seed(uint64_t a, uint64_t b);

}  // namespace ember::sim
