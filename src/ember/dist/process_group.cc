#include "ember/dist/process_group.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "ember/core/error.h"
#include "ember/dist/gloo_backend.h"

#ifdef USE_C10D_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace ember::dist {

namespace {

// The parts' elements in one flat tensor of their dtype: the part itself when it is alone and
// contiguous (then the collective works in place), else a concatenation.
at::Tensor flatten(const std::vector<at::Tensor>& parts) {
  if (parts.size() == 1 && parts[0].is_contiguous()) return parts[0];
  std::vector<at::Tensor> rows;
  rows.reserve(parts.size());
  for (const auto& t : parts) rows.push_back(t.reshape({-1}));
  return at::cat(rows);
}

// Copies flatten(parts)'s layout back from flat into the parts (nothing when flat is the part
// itself): one split_with_sizes_copy when every part is contiguous (a single kernel on CUDA
// instead of one copy per part), else a copy per part.
void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& parts) {
  if (parts.size() == 1 && flat.is_same(parts[0])) return;
  std::vector<int64_t> sizes;
  std::vector<at::Tensor> rows;
  bool contiguous = true;
  for (const auto& t : parts) {
    sizes.push_back(t.numel());
    contiguous = contiguous && t.is_contiguous();
    if (contiguous) rows.push_back(t.view({-1}));
  }
  if (contiguous) {
    at::split_with_sizes_copy_out(rows, flat, sizes, 0);
    return;
  }
  int64_t offset = 0;
  for (const auto& t : parts) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

std::vector<at::Tensor> pick(const std::vector<at::Tensor>& tensors, const std::vector<size_t>& members) {
  std::vector<at::Tensor> out;
  out.reserve(members.size());
  for (size_t i : members) out.push_back(tensors[i]);
  return out;
}

std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// The gradient buckets of attach_gradients() and the all-reduces in flight. Buckets hold the
// parameters in reverse order (the order backward produces their gradients) and are launched
// strictly in bucket order, so every rank issues the same collectives in the same order
// whatever order its gradients arrive in.
struct GradSync {
  std::vector<at::Tensor> params;
  std::vector<std::vector<size_t>> buckets;  // parameter indices
  std::vector<size_t> bucket_of;             // per parameter
  std::vector<size_t> missing;               // per bucket: gradients not yet accumulated
  std::vector<at::Tensor> flats;             // per bucket, once launched
  std::vector<at::Tensor> wires;             // per bucket: what goes over the wire (flats, or a bf16 copy)
  std::vector<at::Tensor> views;             // per parameter: its gradient's place in its bucket
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  size_t launched = 0;  // buckets [0, launched) are in flight
  bool armed = false;
  bool bf16_wire = false;  // fp32 buckets are summed as bf16 copies (DDP's bf16_compress_hook)
  // The first sync learns which parameters get gradients on some rank (the last LM layer's
  // query/MLP weights get none in pi0.5: the action expert reads only its keys and values);
  // the plan after it puts those last, in buckets sent after the backward pass, so that they
  // never hold a complete bucket back.
  std::vector<uint8_t> got_grad;  // per parameter, during the first armed backward
  std::vector<int> owner;          // per parameter (ZeRO), or empty: all-reduce
  std::vector<int> bucket_owner;   // per bucket, with `owner`
  bool planned = false;
  std::string error;    // a launch that failed inside the backward pass
};

class C10dCollectives;

// Runs after a parameter's gradient is accumulated (on the backward pass's thread).
struct GradReadyHook final : torch::autograd::PostAccumulateGradHook {
  GradReadyHook(std::weak_ptr<GradSync> sync, size_t index, C10dCollectives* owner) : sync(std::move(sync)), index(index), owner(owner) {}
  void operator()(const torch::autograd::Variable& tensor) override;
  std::weak_ptr<GradSync> sync;
  size_t index;
  C10dCollectives* owner;
};

class C10dCollectives final : public Collectives {
 public:
  // backend: the tensors' collectives (NCCL on CUDA, Gloo on CPU); host: Gloo, for the host's
  // scalars and barriers (on CPU, the same backend)
  C10dCollectives(const DistEnv& env, c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<c10d::Backend> backend,
                  c10::intrusive_ptr<c10d::Backend> host, at::Device device, std::chrono::milliseconds timeout,
                  int64_t bucket_bytes, bool bf16_gradients)
      : env_(env), store_(std::move(store)), backend_(std::move(backend)), host_(std::move(host)), device_(device),
        timeout_(timeout), bucket_bytes_(bucket_bytes), bf16_gradients_(bf16_gradients) {
    // a heartbeat on its own store connection: a rank that stops beating has died or stalled,
    // which names it when a collective fails while every rank had reached it
    heartbeat_store_ = store_->clone();
    heartbeat_ = std::thread([this] { beat(); });
  }

  ~C10dCollectives() override {
    {
      std::lock_guard<std::mutex> lock(heartbeat_mu_);
      stop_ = true;
    }
    heartbeat_cv_.notify_all();
    heartbeat_.join();
    // what destroy_process_group does: NCCL's communicators and watchdog end here rather than in
    // static destructors at exit
    for (auto* b : {backend_.get(), host_.get() == backend_.get() ? nullptr : host_.get()}) {
      try {
        if (b) b->shutdown();
      } catch (const std::exception&) {
      }
    }
  }

  int rank() const override { return env_.rank; }
  int world_size() const override { return env_.world_size; }
  int local_rank() const override { return env_.local_rank; }
  int local_world_size() const override { return env_.local_world_size; }

  void all_reduce_sum(std::vector<at::Tensor>& tensors) override {
    guarded("all_reduce", [&] {
      at::NoGradGuard no_grad;
      struct InFlight {
        std::vector<size_t> members;
        at::Tensor flat;  // [sum of numel] one dtype, or the tensor itself when alone and contiguous
        c10::intrusive_ptr<c10d::Work> work;
      };
      // every bucket is in flight before the first wait: flattening bucket k+1 overlaps the
      // transfer of bucket k
      std::vector<InFlight> flights;
      for (auto& members : make_buckets(tensors, bucket_bytes_)) {
        InFlight f;
        f.members = std::move(members);
        f.flat = flatten(pick(tensors, f.members));
        std::vector<at::Tensor> one{f.flat};
        f.work = backend_->allreduce(one);
        flights.push_back(std::move(f));
      }
      for (auto& f : flights) {
        f.work->wait();
        unflatten(f.flat, pick(tensors, f.members));
      }
    });
  }

  // On the host's group: no GPU work, so the GPU's queue is neither drained nor waited for.
  double all_reduce_sum(double value) override {
    double out = 0;
    guarded("all_reduce", [&] {
      std::vector<at::Tensor> one{at::full({1}, value, at::TensorOptions().dtype(at::kDouble).device(host_device()))};
      host_wait(host_group().allreduce(one));
      out = one[0].item<double>();
    });
    return out;
  }

  void broadcast(std::vector<at::Tensor>& tensors, int root) override {
    guarded("broadcast", [&] {
      at::NoGradGuard no_grad;
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      std::vector<std::pair<std::vector<size_t>, at::Tensor>> flats;
      c10d::BroadcastOptions o;
      o.rootRank = root;
      for (auto& members : make_buckets(tensors, bucket_bytes_)) {
        std::vector<at::Tensor> one{flatten(pick(tensors, members))};
        works.push_back(backend_->broadcast(one, o));
        flats.emplace_back(std::move(members), one[0]);
      }
      for (size_t k = 0; k < works.size(); ++k) {
        works[k]->wait();
        auto& [members, flat] = flats[k];
        unflatten(flat, pick(tensors, members));
      }
    });
  }

  void attach_gradients(const std::vector<at::Tensor>& params) override {
    sync_ = std::make_shared<GradSync>();
    sync_->params = params;
    sync_->bf16_wire = bf16_gradients_;
    sync_->got_grad.assign(params.size(), 0);
    std::vector<size_t> order(params.size());
    for (size_t i = 0; i < params.size(); ++i) order[i] = params.size() - 1 - i;
    plan(order, {});
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].requires_grad())
        torch::autograd::impl::set_post_acc_grad_hooks(params[i], std::make_unique<GradReadyHook>(sync_, i, this));
  }

  bool set_gradient_owners(const std::vector<int>& owners) override {
    if (!sync_ || owners.size() != sync_->params.size()) return false;
    sync_->owner = owners;
    if (sync_->planned) {
      replan();
    } else {
      std::vector<size_t> order(owners.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
      plan(order, {});
    }
    return true;
  }

  void arm_gradient_sync() override {
    if (!sync_) return;
    auto& s = *sync_;
    s.missing.clear();
    for (const auto& b : s.buckets) s.missing.push_back(b.size());
    s.flats.assign(s.buckets.size(), at::Tensor());
    s.wires.assign(s.buckets.size(), at::Tensor());
    s.views.assign(s.params.size(), at::Tensor());
    s.works.assign(s.buckets.size(), nullptr);
    s.launched = 0;
    s.error.clear();
    s.armed = true;
  }

  // From the hook: one more gradient of bucket bucket_of[index] is final.
  void gradient_ready(size_t index) {
    auto& s = *sync_;
    if (!s.armed || !s.error.empty()) return;
    s.got_grad[index] = 1;
    size_t b = s.bucket_of[index];
    if (s.missing[b] > 0) --s.missing[b];
    try {
      while (s.launched < s.buckets.size() && s.missing[s.launched] == 0) {
        launch(s.launched++);
        ++stats_.launched_in_backward;
      }
    } catch (const std::exception& e) {
      s.error = first_line(e.what());
    }
  }

  void reduce_gradients(std::vector<at::Tensor>& grads) override {
    if (!sync_ || grads.size() != sync_->params.size()) return all_reduce_sum(grads);
    guarded("gradient all_reduce", [&] {
      at::NoGradGuard no_grad;
      auto& s = *sync_;
      if (!s.armed) arm_gradient_sync();
      s.armed = false;
      if (!s.error.empty()) throw std::runtime_error(s.error);
      // buckets whose gradients never all arrived (unused parameters: zeros) go now, in order
      while (s.launched < s.buckets.size()) launch(s.launched++);
      stats_.buckets += int64_t(s.buckets.size());
      ++stats_.syncs;
      for (size_t b = 0; b < s.buckets.size(); ++b) {
        s.works[b]->wait();
        if (!s.owner.empty() && s.bucket_owner[b] != env_.rank) {
          // another rank's parameters: their sum went to it; this rank holds no gradient for them
          for (size_t i : s.buckets[b]) s.params[i].mutable_grad() = at::Tensor();
          continue;
        }
        // a bf16 sum comes back into the fp32 bucket; the parameters' gradients already are the
        // bucket's views; other tensors get a copy
        if (!s.wires[b].is_same(s.flats[b])) s.flats[b].copy_(s.wires[b]);
        for (size_t i : s.buckets[b])
          if (!grads[i].is_same(s.views[i])) grads[i].copy_(s.views[i]);
      }
      s.flats.assign(s.buckets.size(), at::Tensor());
      s.wires.assign(s.buckets.size(), at::Tensor());
      s.views.assign(s.params.size(), at::Tensor());
      s.works.assign(s.buckets.size(), nullptr);
      if (!s.planned) replan();
    });
  }

  // An all-reduce of one element on the host's group: the hosts meet; the GPUs' queues run on.
  void barrier() override {
    guarded("barrier", [&] {
      std::vector<at::Tensor> one{at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(host_device()))};
      host_wait(host_group().allreduce(one));
    });
  }

 private:
  // The host's group: Gloo; where this build has no Gloo, the tensors' backend, waited for on
  // the host with the timeout.
  c10d::Backend& host_group() { return host_ ? *host_ : *backend_; }
  at::Device host_device() const { return host_ ? at::Device(at::kCPU) : device_; }
  void host_wait(const c10::intrusive_ptr<c10d::Work>& work) {
    if (host_) work->wait();
    else work->wait(timeout_);  // an explicit timeout makes NCCL's wait block the host
  }

  // Runs one collective; records this rank's progress first so that, when it fails, the
  // message can name the ranks that never reached it.
  void guarded(const char* op, const std::function<void()>& body) {
    ++ops_;
    try {
      store_->set(progress_key(env_.rank), std::to_string(ops_));
      body();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(ErrorKind::kIO, "rank " + std::to_string(env_.rank) + ": " + op + " #" + std::to_string(ops_) + " failed: " +
                                      diagnose() + " (" + first_line(e.what()) + ")");
    }
  }

  // Buckets of `first` (in that order), then of `last`; with owners, a new bucket wherever the
  // owner changes. Each dtype fills its own buckets (bf16 parameters with fp32 norms between
  // them would otherwise cut a bucket at every norm), placed by their last member.
  void plan(const std::vector<size_t>& first, const std::vector<size_t>& last) {
    auto& s = *sync_;
    s.buckets.clear();
    s.bucket_owner.clear();
    auto owner_of = [&](size_t i) { return s.owner.empty() ? 0 : s.owner[i]; };
    for (const auto* group : {&first, &last}) {
      for (size_t begin = 0; begin < group->size();) {
        size_t end = begin;
        while (end < group->size() && owner_of((*group)[end]) == owner_of((*group)[begin])) ++end;
        std::map<at::ScalarType, std::vector<size_t>> by_dtype;  // places k in [begin, end)
        for (size_t k = begin; k < end; ++k) by_dtype[s.params[(*group)[k]].scalar_type()].push_back(k);
        std::vector<std::pair<size_t, std::vector<size_t>>> made;  // (last member's place, members)
        for (const auto& [dtype, places] : by_dtype) {
          std::vector<at::Tensor> tensors;
          for (size_t k : places) tensors.push_back(s.params[(*group)[k]]);
          for (auto members : make_buckets(tensors, bucket_bytes_)) {
            size_t last_place = 0;
            for (auto& m : members) last_place = std::max(last_place, places[m]), m = (*group)[places[m]];
            made.emplace_back(last_place, std::move(members));
          }
        }
        std::stable_sort(made.begin(), made.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (auto& [place, members] : made) {
          s.buckets.push_back(std::move(members));
          s.bucket_owner.push_back(owner_of((*group)[begin]));
        }
        begin = end;
      }
    }
    s.bucket_of.assign(s.params.size(), 0);
    for (size_t b = 0; b < s.buckets.size(); ++b)
      for (size_t i : s.buckets[b]) s.bucket_of[i] = b;
  }

  // After the first sync: parameters that got a gradient on any rank, in the order they got it
  // here (reverse parameter order), then the others. The same plan on every rank.
  void replan() {
    auto& s = *sync_;
    auto flags = at::tensor(std::vector<float>(s.got_grad.begin(), s.got_grad.end())).to(device_);
    std::vector<at::Tensor> one{flags};
    backend_->allreduce(one)->wait();
    auto used = one[0].cpu();
    std::vector<size_t> first, last;
    for (size_t k = 0; k < s.params.size(); ++k) {
      size_t i = s.params.size() - 1 - k;
      (used[int64_t(i)].item<float>() > 0 ? first : last).push_back(i);
    }
    plan(first, last);
    s.planned = true;
  }

  // Starts bucket b's all-reduce from its parameters' current gradients (undefined: zeros).
  void launch(size_t b) {
    auto& s = *sync_;
    std::vector<at::Tensor> parts;
    for (size_t i : s.buckets[b]) {
      auto& p = s.params[i];
      if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
      parts.push_back(p.grad());
    }
    s.flats[b] = flatten(parts);
    // the gradients become views of the bucket (DDP's gradient_as_bucket_view): the sum lands in
    // them, with no copy back after the backward pass, and the gradients just copied are freed
    int64_t offset = 0;
    for (size_t i : s.buckets[b]) {
      auto& p = s.params[i];
      const int64_t n = p.numel();
      s.views[i] = s.flats[b].view({-1}).narrow(0, offset, n).view(p.sizes());
      p.mutable_grad() = s.views[i];
      offset += n;
    }
    s.wires[b] = s.bf16_wire && s.flats[b].scalar_type() == at::kFloat ? s.flats[b].to(at::kBFloat16) : s.flats[b];
    std::vector<at::Tensor> one{s.wires[b]};
    if (s.owner.empty()) {
      s.works[b] = backend_->allreduce(one);
    } else {
      c10d::ReduceOptions o;
      o.rootRank = s.bucket_owner[b];
      s.works[b] = backend_->reduce(one, o);
    }
  }

  static std::string progress_key(int rank) { return "ember/progress/" + std::to_string(rank); }
  static std::string heartbeat_key(int rank) { return "ember/heartbeat/" + std::to_string(rank); }
  static constexpr std::chrono::milliseconds kBeat{500};

  void beat() {
    std::unique_lock<std::mutex> lock(heartbeat_mu_);
    for (int64_t n = 1; !stop_; ++n) {
      try {
        heartbeat_store_->set(heartbeat_key(env_.rank), std::to_string(n));
      } catch (const std::exception&) {
        // the store (rank 0) is gone: the collectives will say so
      }
      heartbeat_cv_.wait_for(lock, kBeat, [&] { return stop_; });
    }
  }

  // Ranks whose heartbeat does not move over a few beats.
  std::vector<int> silent_ranks() {
    auto read = [&] {
      std::vector<std::string> v(env_.world_size);
      for (int r = 0; r < env_.world_size; ++r)
        if (r != env_.rank && store_->check({heartbeat_key(r)})) {
          auto bytes = store_->get(heartbeat_key(r));
          v[r].assign(bytes.begin(), bytes.end());
        }
      return v;
    };
    auto before = read();
    std::this_thread::sleep_for(4 * kBeat);
    auto after = read();
    std::vector<int> silent;
    for (int r = 0; r < env_.world_size; ++r)
      if (r != env_.rank && before[r] == after[r]) silent.push_back(r);
    return silent;
  }

  // Which ranks are behind this one, from the store (rank 0 serves it).
  std::string diagnose() {
    std::vector<std::string> behind;
    try {
      store_->setTimeout(std::chrono::seconds(5));
      for (int r = 0; r < env_.world_size; ++r) {
        if (r == env_.rank) continue;
        int64_t at = 0;
        if (store_->check({progress_key(r)})) {
          auto v = store_->get(progress_key(r));
          at = std::stoll(std::string(v.begin(), v.end()));
        }
        if (at < ops_) behind.push_back("rank " + std::to_string(r) + " (at collective #" + std::to_string(at) + ")");
      }
    } catch (const std::exception&) {
      return "rank 0 (which serves the rendezvous store at " + env_.master_addr + ":" + std::to_string(env_.master_port) +
             ") is unreachable: it died or stalled";
    }
    if (behind.empty()) {
      std::vector<int> silent;
      try {
        silent = silent_ranks();
      } catch (const std::exception&) {
      }
      std::string s;
      for (int r : silent) s += (s.empty() ? "rank " : ", rank ") + std::to_string(r);
      if (!s.empty()) return s + (silent.size() == 1 ? " stopped responding inside it: it died or stalled" : " stopped responding inside it: they died or stalled");
      return "a peer closed its connection or timed out after " + std::to_string(timeout_.count() / 1000) + " s";
    }
    std::string s;
    for (const auto& b : behind) s += (s.empty() ? "" : ", ") + b;
    return s + (behind.size() == 1 ? " never reached it: it died or stalled" : " never reached it: they died or stalled");
  }

  DistEnv env_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  c10::intrusive_ptr<c10d::Backend> host_;
  at::Device device_;
  std::chrono::milliseconds timeout_;
  int64_t bucket_bytes_;
  bool bf16_gradients_;
  int64_t ops_ = 0;
  std::shared_ptr<GradSync> sync_;  // set by attach_gradients
  c10::intrusive_ptr<c10d::Store> heartbeat_store_;
  std::mutex heartbeat_mu_;
  std::condition_variable heartbeat_cv_;
  bool stop_ = false;
  std::thread heartbeat_;  // last: starts after the members it uses

 public:
  GradSyncStats stats_;
};

void GradReadyHook::operator()(const torch::autograd::Variable&) {
  if (auto alive = sync.lock()) owner->gradient_ready(index);
}

}  // namespace

GradSyncStats grad_sync_stats(const Collectives& collectives) {
  auto* c = dynamic_cast<const C10dCollectives*>(&collectives);
  return c ? c->stats_ : GradSyncStats{};
}

std::vector<std::vector<size_t>> make_buckets(const std::vector<at::Tensor>& tensors, int64_t bytes) {
  std::vector<std::vector<size_t>> buckets;
  int64_t filled = 0;
  at::ScalarType dtype = at::kFloat;
  for (size_t i = 0; i < tensors.size(); ++i) {
    int64_t n = tensors[i].numel() * int64_t(tensors[i].element_size());
    bool fits = !buckets.empty() && tensors[i].scalar_type() == dtype && filled + n <= bytes;
    if (!fits) {
      buckets.emplace_back();
      filled = 0;
      dtype = tensors[i].scalar_type();
    }
    buckets.back().push_back(i);
    filled += n;
  }
  return buckets;
}

std::string local_address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) throw Error(ErrorKind::kIO, "MASTER_ADDR=" + host + ": cannot resolve: " + gai_strerror(rc));
  std::string error = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    char text[INET6_ADDRSTRLEN] = {0};
    bool ok = connect(fd, a->ai_addr, a->ai_addrlen) == 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
    if (!ok) error = std::strerror(errno);
    close(fd);
    if (!ok) continue;
    const void* addr = local.ss_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                                                   : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
    if (inet_ntop(local.ss_family, addr, text, sizeof(text))) {
      freeaddrinfo(found);
      return text;
    }
  }
  freeaddrinfo(found);
  throw Error(ErrorKind::kIO, "MASTER_ADDR=" + host + ": no route from this host: " + error);
}

std::shared_ptr<Collectives> make_collectives(const DistEnv& env, const at::Device& device,
                                                     std::chrono::milliseconds timeout, int64_t bucket_bytes,
                                                     bool bf16_gradients) {
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    c10d::TCPStoreOptions o;
    o.port = uint16_t(env.master_port);
    o.isServer = env.rank == 0;
    o.numWorkers = size_t(env.world_size);
    o.waitWorkers = true;
    o.timeout = timeout;
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kIO, "rank " + std::to_string(env.rank) + ": rendezvous at " + where + " (MASTER_ADDR:MASTER_PORT) failed within " +
                                    std::to_string(timeout.count() / 1000) + " s: " + first_line(e.what()));
  }
  auto pg_store = c10::make_intrusive<c10d::PrefixStore>("ember/pg", store);
  c10::intrusive_ptr<c10d::Backend> backend, host;
  try {
    try {
      host = make_gloo_backend(c10::make_intrusive<c10d::PrefixStore>("ember/host", store), env.rank, env.world_size,
                               env.master_addr, env.master_port, timeout);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kUnsupported || !device.is_cuda()) throw;  // CUDA jobs manage without Gloo
    }
    if (device.is_cuda()) {
#ifdef USE_C10D_NCCL
      // NCCL's waits are stream-ordered (no TORCH_NCCL_BLOCKING_WAIT): the host never blocks on a
      // gradient bucket. A rank that dies or stalls is caught by the host group's barriers (the
      // trainer's hosts meet at least every 50 steps and run at most 2 steps ahead of their
      // GPUs) within about twice the timeout; NCCL's own watchdog, at twice the timeout, is the
      // backstop.
      setenv("NCCL_NVLS_ENABLE", "0", 0);
      c10::cuda::set_device(device.index());
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = 2 * timeout;
      backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(pg_store, env.rank, env.world_size, o);
#else
      throw Error(ErrorKind::kUnsupported, "this libtorch has no NCCL: distributed training on CUDA needs it");
#endif
    } else {
      backend = host;
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kIO, "rank " + std::to_string(env.rank) + ": process group over " + where + " failed: " + first_line(e.what()));
  }
  return std::make_shared<C10dCollectives>(env, store, backend, host, device, timeout, std::max<int64_t>(1, bucket_bytes),
                                           bf16_gradients);
}

}  // namespace ember::dist
