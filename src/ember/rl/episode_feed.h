// What the environment workers share: the episodes to run, handed out group by group (GRPO: the
// group_size members of a group start from the same initial state, each with its own seed), a
// budget of groups that may start (the learner's pacing: sync releases one step's groups at a
// time, async keeps the next step's ready too), and the finished trajectories, assembled into
// groups for the learner. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "ember/rl/trajectory.h"
#include "ember/sim/vector_env.h"

namespace ember::rl {

class EpisodeFeed {
 public:
  // tasks must outlive the feed. Group g runs tasks[g % size] from a training initial state
  // drawn from (seed, g) (never one of the evaluation states). A data-parallel job's rank r of
  // `ranks` runs the groups g = l * ranks + r, its l-th group (counted from first_group, which is
  // in this rank's numbering), so the ranks' groups are those of one process, interleaved.
  EpisodeFeed(std::vector<const sim::TaskSpec*> tasks, int group_size, uint64_t seed, int64_t first_group, int rank = 0,
              int ranks = 1);

  // The next episode (Episode::id = group * group_size + member), or nothing when the budget
  // is spent or stop() was called. Never blocks: a worker's vector env asks from inside its step.
  std::optional<sim::Episode> next();
  // Blocks until an episode may start (true) or stop() was called (false).
  bool wait_for_episode();
  // Lets this rank's groups below first_group + groups (its numbering) start.
  void allow(int64_t groups);
  // A finished episode; its group goes to the learner's queue once all members are in.
  void finish(Trajectory t);
  // The next complete group, oldest completion first. Blocks; nothing after stop(). Rethrows
  // a worker's error passed to fail().
  std::optional<Group> pop();
  void stop();
  void fail(std::exception_ptr error);
  bool stopped();

  // (group, member) of an episode id
  int64_t group_of(int id) const { return id / group_size_; }
  int member_of(int id) const { return id % group_size_; }

 private:
  std::vector<const sim::TaskSpec*> tasks_;
  int group_size_;
  uint64_t seed_;
  int64_t first_group_;
  int rank_, ranks_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t allowed_ = 0;   // this rank's groups that may start (counted from first_group)
  int64_t next_ = 0;      // this rank's episodes handed out (counted from first_group * group_size)
  std::map<int64_t, Group> open_;
  std::deque<Group> done_;
  bool stopped_ = false;
  std::exception_ptr error_;
};

}  // namespace ember::rl
