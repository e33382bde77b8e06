#include "ember/sim/tasks.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/sim/scene.h"

namespace ember::sim {

const char* family_name(Family f) {
  switch (f) {
    case Family::kPickPlace: return "pick_place";
    case Family::kPush: return "push";
    case Family::kStack: return "stack";
    case Family::kPress: return "press";
  }
  return "?";
}

double Rng::normal() {
  double u1 = uniform(1e-12, 1.0), u2 = uniform();
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

uint64_t hash_string(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint64_t mix_seed(uint64_t a, uint64_t b) {
  Rng r(a ^ (b * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull));
  return r.next();
}

namespace {

// ember10's placement jitter around each task's layout: +-2.5 cm, the widest of LIBERO's init
// regions (+-1 to +-2.5 cm around a per-task layout).
constexpr double kLayoutJitter = 0.025;

TaskSpec task(std::string name, std::string instruction, Family f, std::string object, std::string target,
              std::vector<std::string> distractors, int max_steps, double spread = 1.0, double jitter = kLayoutJitter) {
  return TaskSpec{std::move(name), std::move(instruction), f, std::move(object), std::move(target),
                  std::move(distractors), max_steps, spread, jitter};
}

const std::vector<Suite>& suites() {
  static const std::vector<Suite> all = {
      {"ember10",
       {
           task("pick_red_into_tray", "put the red cube in the tray", Family::kPickPlace, "cube_red", "tray",
                {"cube_green"}, 200),
           task("pick_blue_into_tray", "put the blue cube in the tray", Family::kPickPlace, "cube_blue", "tray",
                {"cube_yellow"}, 200),
           task("pick_yellow_into_tray", "put the yellow cube in the tray", Family::kPickPlace, "cube_yellow",
                "tray", {"cube_red"}, 200),
           task("push_red_to_pad", "push the red cube onto the pink pad", Family::kPush, "cube_red", "pad",
                {"cube_blue"}, 200),
           task("push_green_to_pad", "push the green cube onto the pink pad", Family::kPush, "cube_green", "pad",
                {"cube_yellow"}, 200),
           task("push_blue_to_pad", "push the blue cube onto the pink pad", Family::kPush, "cube_blue", "pad",
                {"cube_red"}, 200),
           task("stack_red_on_blue", "stack the red cube on the blue cube", Family::kStack, "cube_red",
                "cube_blue", {}, 200),
           task("stack_yellow_on_green", "stack the yellow cube on the green cube", Family::kStack, "cube_yellow",
                "cube_green", {"cube_red"}, 200),
           task("press_red_button", "press the red button", Family::kPress, "button_red", "", {"button_blue"}, 120),
           task("press_blue_button", "press the blue button", Family::kPress, "button_blue", "", {"button_red"},
                120),
       }},
      {"easy",
       {
           task("easy_press_red", "press the red button", Family::kPress, "button_red", "", {}, 80, 0.4, 0.0),
       }},
  };
  return all;
}

// Footprint radius of a body for keeping things apart.
double radius(const std::string& body) {
  if (body == "tray") return 0.095;
  if (body == "pad") return 0.07;
  if (body.rfind("button", 0) == 0) return 0.045;
  return 0.03;  // cubes
}

double dist(const Placement& a, const Placement& b) { return std::hypot(a.x - b.x, a.y - b.y); }

// Distance from point p to the segment a-b in the plane.
double segment_dist(const Placement& p, const Placement& a, const Placement& b) {
  double dx = b.x - a.x, dy = b.y - a.y, L2 = dx * dx + dy * dy;
  double t = L2 > 0 ? std::clamp(((p.x - a.x) * dx + (p.y - a.y) * dy) / L2, 0.0, 1.0) : 0.0;
  return std::hypot(p.x - a.x - t * dx, p.y - a.y - t * dy);
}

// margin: extra clearance, so that a layout stays valid when its bodies are jittered.
bool valid(const TaskSpec& t, const std::vector<Placement>& items, double margin = 0.0) {
  for (size_t i = 0; i < items.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (dist(items[i], items[j]) < radius(items[i].body) + radius(items[j].body) + 0.03 + margin) return false;
  if (t.family == Family::kPush) {
    const Placement &cube = items[0], &pad = items[1];
    double d = dist(cube, pad);
    if (d < 0.13 + margin / 2 || d > 0.24 - margin / 2) return false;
    // the expert approaches from behind the cube: that spot must be on the table and clear
    Placement behind{"", cube.x - (pad.x - cube.x) / d * 0.07, cube.y - (pad.y - cube.y) / d * 0.07, 0};
    if (behind.x < -0.2 + margin || std::abs(behind.y) > 0.3 - margin) return false;
    for (size_t i = 2; i < items.size(); ++i) {
      if (segment_dist(items[i], behind, pad) < 0.075 + margin) return false;
    }
  }
  return true;
}

std::vector<std::string> task_bodies(const TaskSpec& t) {
  std::vector<std::string> bodies = {t.object};
  if (!t.target.empty()) bodies.push_back(t.target);
  for (const auto& d : t.distractors) bodies.push_back(d);
  return bodies;
}

// Every body anywhere in the (spread-scaled) table region; cubes at a random yaw.
InitState sample_anywhere(const TaskSpec& t, Rng& rng, double margin) {
  const std::vector<std::string> bodies = task_bodies(t);
  const double s = t.spread;
  const double cx = 0.02, cy = 0.0, hx = 0.13 * s, hy = 0.2 * s;
  for (int attempt = 0;; ++attempt) {
    std::vector<Placement> items;
    for (const auto& b : bodies) {
      Placement p{b, rng.uniform(cx - hx, cx + hx), rng.uniform(cy - hy, cy + hy), 0};
      if (b.rfind("cube", 0) == 0) p.yaw = rng.uniform(-0.4, 0.4);
      items.push_back(p);
    }
    if (valid(t, items, margin)) return InitState{items};
    if (attempt > 100000) fail(ErrorKind::kInternal, "task " + t.name + ": cannot place its objects");
  }
}

InitState sample(const TaskSpec& t, Rng& rng) {
  if (t.jitter <= 0) return sample_anywhere(t, rng, 0.0);
  // the task's layout: a function of its name only, with room for the jitter
  Rng layout_rng(mix_seed(hash_string(t.name), 0x1A7007));
  const InitState layout = sample_anywhere(t, layout_rng, 2 * t.jitter);
  for (int attempt = 0;; ++attempt) {
    InitState s = layout;
    for (Placement& p : s.items) {
      p.x += rng.uniform(-t.jitter, t.jitter);
      p.y += rng.uniform(-t.jitter, t.jitter);
      if (p.body.rfind("cube", 0) == 0) p.yaw = rng.uniform(-0.4, 0.4);
    }
    if (valid(t, s.items)) return s;
    if (attempt > 100000) fail(ErrorKind::kInternal, "task " + t.name + ": cannot jitter its layout");
  }
}

}  // namespace

std::vector<const TaskSpec*> select_tasks(const Suite& suite, const std::vector<std::string>& names) {
  std::vector<const TaskSpec*> tasks;
  if (names.empty()) {
    for (const auto& t : suite.tasks) tasks.push_back(&t);
    return tasks;
  }
  for (const std::string& name : names) {
    const TaskSpec* found = nullptr;
    for (const auto& t : suite.tasks)
      if (t.name == name) found = &t;
    if (!found) fail(ErrorKind::kInvalidArgument, "--task: '" + name + "' is not a task of suite " + suite.name);
    tasks.push_back(found);
  }
  return tasks;
}

const Suite& find_suite(std::string_view name) {
  for (const auto& s : suites())
    if (s.name == name) return s;
  std::string known;
  for (const auto& s : suites()) known += (known.empty() ? "" : ", ") + s.name;
  fail(ErrorKind::kInvalidArgument, "--suite: unknown suite '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<std::string> suite_names() {
  std::vector<std::string> out;
  for (const auto& s : suites()) out.push_back(s.name);
  return out;
}

const TaskSpec& find_task(std::string_view name) {
  std::string known;
  for (const auto& s : suites())
    for (const auto& t : s.tasks) {
      if (t.name == name) return t;
      known += (known.empty() ? "" : ", ") + t.name;
    }
  fail(ErrorKind::kInvalidArgument, "--task: unknown task '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<InitState> make_init_states(const TaskSpec& task, int count, uint64_t seed) {
  Rng rng(mix_seed(hash_string(task.name), seed));
  std::vector<InitState> out;
  for (int i = 0; i < count; ++i) out.push_back(sample(task, rng));
  return out;
}

namespace {

std::vector<InitState> read_init_states(const TaskSpec& task, const std::string& path) {
  std::vector<InitState> out;
  const std::vector<std::string> bodies = task_bodies(task);
  try {
    nlohmann::json j = read_json_file(path);
    if (j.at("task").get<std::string>() != task.name) fail_corrupt(path + ": \"task\" is not " + task.name);
    for (const auto& state : j.at("states")) {
      InitState s;
      for (const auto& item : state)
        s.items.push_back(Placement{item.at("body").get<std::string>(), item.at("x").get<double>(),
                                    item.at("y").get<double>(), item.at("yaw").get<double>()});
      if (s.items.size() != bodies.size()) fail_corrupt(path + ": a state does not place the task's bodies");
      for (size_t i = 0; i < bodies.size(); ++i)
        if (s.items[i].body != bodies[i])
          fail_corrupt(path + ": a state places '" + s.items[i].body + "' where the task has '" + bodies[i] + "'");
      out.push_back(std::move(s));
    }
  } catch (const nlohmann::json::exception& e) {
    fail_corrupt(path + ": " + e.what());
  }
  if (out.size() != size_t(kEvalInitStates))
    fail_corrupt(path + ": " + std::to_string(out.size()) + " states, expected " + std::to_string(kEvalInitStates));
  return out;
}

}  // namespace

const std::vector<InitState>& eval_init_states(const TaskSpec& task) {
  static std::mutex mu;
  static std::map<std::string, std::vector<InitState>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(task.name);
  if (it == cache.end()) {
    const std::string path = default_asset_dir() + "/init_states/" + task.name + ".json";
    std::vector<InitState> states = std::filesystem::exists(path) ? read_init_states(task, path)
                                                                  : make_init_states(task, kEvalInitStates, 0);
    it = cache.emplace(task.name, std::move(states)).first;
  }
  return it->second;
}

void export_init_states(const TaskSpec& task, const std::string& dir) {
  nlohmann::json j;
  j["task"] = task.name;
  j["instruction"] = task.instruction;
  j["note"] = "ember's evaluation init states (x, y in metres on the table top, yaw in radians)";
  j["states"] = nlohmann::json::array();
  for (const InitState& s : make_init_states(task, kEvalInitStates, 0)) {
    nlohmann::json state = nlohmann::json::array();
    for (const Placement& p : s.items) state.push_back({{"body", p.body}, {"x", p.x}, {"y", p.y}, {"yaw", p.yaw}});
    j["states"].push_back(state);
  }
  std::filesystem::create_directories(dir);
  // one state per line: readable diffs when states change
  std::string text = "{\"task\": " + nlohmann::json(task.name).dump() + ",\n \"instruction\": " +
                     nlohmann::json(task.instruction).dump() + ",\n \"note\": " + j["note"].dump() +
                     ",\n \"states\": [\n";
  for (size_t i = 0; i < j["states"].size(); ++i)
    text += "  " + j["states"][i].dump() + (i + 1 < j["states"].size() ? ",\n" : "\n");
  text += " ]\n}\n";
  AtomicFile f(dir + "/" + task.name + ".json");
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace ember::sim
