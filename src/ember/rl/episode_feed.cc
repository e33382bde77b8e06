#include "ember/rl/episode_feed.h"

namespace ember::rl {

EpisodeFeed::EpisodeFeed(std::vector<const sim::TaskSpec*> tasks, int group_size, uint64_t seed, int64_t first_group, int rank, int ranks)
    : tasks_(std::move(tasks)), group_size_(group_size), seed_(seed), first_group_(first_group), rank_(rank), ranks_(ranks) {}

std::optional<sim::Episode> EpisodeFeed::next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_ || next_ >= allowed_ * group_size_) return std::nullopt;
  const int64_t mine = first_group_ * group_size_ + next_++;  // this rank's numbering
  const int64_t group = (mine / group_size_) * ranks_ + rank_;
  const int64_t episode = group * group_size_ + mine % group_size_;
  lock.unlock();
  // the group's initial state: a training state (seed != 0: not the evaluation states)
  const sim::TaskSpec& task = *tasks_[size_t(group) % tasks_.size()];
  const uint64_t group_seed = sim::mix_seed(seed_, uint64_t(group));
  sim::Episode e;
  e.task = &task;
  e.init_index = -1;
  e.init = sim::make_init_states(task, 1, group_seed | 1)[0];
  e.seed = sim::mix_seed(group_seed, uint64_t(episode % group_size_) + 1);
  e.id = int(episode);
  return e;
}

bool EpisodeFeed::wait_for_episode() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return stopped_ || next_ < allowed_ * group_size_; });
  return !stopped_;
}

void EpisodeFeed::allow(int64_t groups) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    allowed_ = std::max(allowed_, groups);
  }
  cv_.notify_all();
}

void EpisodeFeed::finish(Trajectory t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Group& g = open_[t.group];
    g.id = t.group;
    if (g.members.empty()) g.members.resize(size_t(group_size_));
    const int member = t.member;
    g.members[size_t(member)] = std::move(t);
    int in = 0;
    for (const auto& m : g.members) in += !m.chunks.empty();
    if (in < group_size_) return;
    done_.push_back(std::move(g));
    open_.erase(done_.back().id);
  }
  cv_.notify_all();
}

std::optional<Group> EpisodeFeed::pop() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return stopped_ || error_ || !done_.empty(); });
  if (error_) std::rethrow_exception(error_);
  if (done_.empty()) return std::nullopt;
  Group g = std::move(done_.front());
  done_.pop_front();
  return g;
}

void EpisodeFeed::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

void EpisodeFeed::fail(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = error;
  }
  cv_.notify_all();
}

bool EpisodeFeed::stopped() {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

}  // namespace ember::rl
