#include "ember/dist/env.h"

#include <cctype>
#include <charconv>
#include <cstdlib>

#include "ember/core/error.h"

namespace ember::dist {

namespace {

[[noreturn]] void bad_var(std::string_view name, const std::string& value, const std::string& why) {
  fail(ErrorKind::kInvalidArgument, std::string(name) + "=" + value + ": " + why);
}

// An environment read through the lookup, with the error messages that name the variable.
class Vars {
 public:
  explicit Vars(const EnvLookup& env) : env_(env) {}

  std::optional<std::string> get(std::string_view name) const {
    std::optional<std::string> v = env_(name);
    if (v && v->empty()) return std::nullopt;
    return v;
  }
  bool has(std::string_view name) const { return get(name).has_value(); }

  std::optional<long long> get_int(std::string_view name) const {
    std::optional<std::string> v = get(name);
    if (!v) return std::nullopt;
    long long x = 0;
    const char* end = v->data() + v->size();
    auto [ptr, ec] = std::from_chars(v->data(), end, x);
    if (ec == std::errc::result_out_of_range) bad_var(name, *v, "integer out of range");
    if (ec != std::errc() || ptr != end) bad_var(name, *v, "not an integer");
    return x;
  }
  long long require_int(std::string_view name, std::string_view needed_by) const {
    std::optional<long long> v = get_int(name);
    if (!v) fail(ErrorKind::kInvalidArgument, std::string(name) + " is not set but " + std::string(needed_by) + " is");
    return *v;
  }
  std::string value(std::string_view name) const { return get(name).value_or(""); }

 private:
  const EnvLookup& env_;
};

constexpr long long kMaxCount = 1 << 24;  // far above any real job, far below int overflow

int at_least(const Vars& vars, std::string_view name, long long v, long long lo) {
  if (v < lo) bad_var(name, vars.value(name), "must be at least " + std::to_string(lo));
  if (v > kMaxCount) bad_var(name, vars.value(name), "too large");
  return int(v);
}

// rank-like value in [0, bound); `bound_text` names the bound ("WORLD_SIZE=4").
int index_in(const Vars& vars, std::string_view name, long long v, long long bound, const std::string& bound_text) {
  if (v < 0 || v >= bound) bad_var(name, vars.value(name), "must be in [0, " + bound_text + ")");
  return int(v);
}

int port_of(const Vars& vars, std::string_view name) {
  long long p = *vars.get_int(name);
  if (p < 1 || p > 65535) bad_var(name, vars.value(name), "not a port number (1-65535)");
  return int(p);
}

std::string bound(std::string_view name, long long v) { return std::string(name) + "=" + std::to_string(v); }

// Fills master_addr / master_port from MASTER_ADDR / MASTER_PORT when set.
void read_master(const Vars& vars, DistEnv& e) {
  if (auto a = vars.get("MASTER_ADDR")) e.master_addr = *a;
  if (vars.has("MASTER_PORT")) e.master_port = port_of(vars, "MASTER_PORT");
}

// Checks the local layout against the world and derives the node fields.
void finish_layout(const Vars& vars, DistEnv& e, std::string_view local_rank_var, long long local_rank,
                   std::string_view local_size_var) {
  if (e.local_world_size > e.world_size)
    bad_var(local_size_var, vars.value(local_size_var), "larger than the world size " + std::to_string(e.world_size));
  e.local_rank = index_in(vars, local_rank_var, local_rank, e.local_world_size, bound(local_size_var, e.local_world_size));
  e.num_nodes = (e.world_size + e.local_world_size - 1) / e.local_world_size;
  e.node_rank = e.rank / e.local_world_size;
}

DistEnv from_torchrun(const Vars& vars) {
  DistEnv e;
  e.launcher = Launcher::kTorchrun;
  long long world = vars.require_int("WORLD_SIZE", "RANK");
  e.world_size = at_least(vars, "WORLD_SIZE", world, 1);
  e.rank = index_in(vars, "RANK", vars.require_int("RANK", "WORLD_SIZE"), world, bound("WORLD_SIZE", world));
  e.local_world_size = vars.has("LOCAL_WORLD_SIZE") ? at_least(vars, "LOCAL_WORLD_SIZE", *vars.get_int("LOCAL_WORLD_SIZE"), 1)
                                                    : e.world_size;
  long long local_rank = vars.get_int("LOCAL_RANK").value_or(e.rank % e.local_world_size);
  finish_layout(vars, e, "LOCAL_RANK", local_rank, "LOCAL_WORLD_SIZE");
  if (auto g = vars.get_int("GROUP_RANK")) e.node_rank = index_in(vars, "GROUP_RANK", *g, e.num_nodes, bound("nodes", e.num_nodes));
  if (!vars.has("MASTER_ADDR") && e.num_nodes > 1)
    fail(ErrorKind::kInvalidArgument, "MASTER_ADDR is not set but the job spans " + std::to_string(e.num_nodes) +
                                          " nodes (WORLD_SIZE=" + std::to_string(e.world_size) +
                                          ", LOCAL_WORLD_SIZE=" + std::to_string(e.local_world_size) + ")");
  read_master(vars, e);
  return e;
}

// This node's task count from SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE; 0 if neither.
int slurm_local_size(const Vars& vars) {
  if (vars.has("SLURM_NTASKS_PER_NODE"))
    return at_least(vars, "SLURM_NTASKS_PER_NODE", *vars.get_int("SLURM_NTASKS_PER_NODE"), 1);
  if (auto t = vars.get("SLURM_TASKS_PER_NODE")) {
    std::vector<int> per_node;
    try {
      per_node = slurm_tasks_per_node(*t);
    } catch (const Error& err) {
      bad_var("SLURM_TASKS_PER_NODE", *t, err.what());
    }
    long long node = vars.get_int("SLURM_NODEID").value_or(0);
    index_in(vars, "SLURM_NODEID", node, static_cast<long long>(per_node.size()),
             "the " + std::to_string(per_node.size()) + " nodes of SLURM_TASKS_PER_NODE");
    return per_node[size_t(node)];
  }
  return 0;
}

DistEnv from_slurm(const Vars& vars) {
  DistEnv e;
  e.launcher = Launcher::kSlurm;
  long long world = vars.require_int("SLURM_NTASKS", "SLURM_PROCID");
  e.world_size = at_least(vars, "SLURM_NTASKS", world, 1);
  e.rank = index_in(vars, "SLURM_PROCID", *vars.get_int("SLURM_PROCID"), world, bound("SLURM_NTASKS", world));
  std::optional<long long> nodes = vars.get_int("SLURM_NNODES");
  if (!nodes) nodes = vars.get_int("SLURM_JOB_NUM_NODES");
  std::string_view nodes_var = vars.has("SLURM_NNODES") ? "SLURM_NNODES" : "SLURM_JOB_NUM_NODES";
  if (nodes) at_least(vars, nodes_var, *nodes, 1);
  // tasks on this node: stated, else an even share of the nodes, else all of them
  int local = slurm_local_size(vars);
  std::string_view local_var = vars.has("SLURM_NTASKS_PER_NODE") ? "SLURM_NTASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
  if (local == 0) {
    local = nodes ? int((e.world_size + *nodes - 1) / *nodes) : e.world_size;
    local_var = "SLURM_NTASKS";
  }
  e.local_world_size = local;
  long long local_rank = vars.get_int("SLURM_LOCALID").value_or(e.rank % local);
  finish_layout(vars, e, "SLURM_LOCALID", local_rank, local_var);
  if (nodes) e.num_nodes = int(*nodes);
  if (auto node = vars.get_int("SLURM_NODEID"))
    e.node_rank = index_in(vars, "SLURM_NODEID", *node, e.num_nodes, bound("nodes", e.num_nodes));
  // master: rank 0 runs on the first host of the job's node list
  std::string_view list_var = vars.has("SLURM_JOB_NODELIST") ? "SLURM_JOB_NODELIST" : "SLURM_NODELIST";
  if (vars.has("MASTER_ADDR")) {
    // read_master below
  } else if (auto list = vars.get(list_var)) {
    try {
      e.master_addr = slurm_first_host(*list);
    } catch (const Error& err) {
      bad_var(list_var, *list, err.what());
    }
  } else if (e.num_nodes > 1) {
    fail(ErrorKind::kInvalidArgument, "neither MASTER_ADDR nor SLURM_JOB_NODELIST is set but the Slurm job spans " +
                                          std::to_string(e.num_nodes) + " nodes");
  }
  // a port per job, so that jobs sharing a node do not collide
  if (auto job = vars.get_int("SLURM_JOB_ID")) {
    if (*job < 0) bad_var("SLURM_JOB_ID", vars.value("SLURM_JOB_ID"), "must not be negative");
    e.master_port = int(20000 + *job % 20000);
  }
  read_master(vars, e);
  return e;
}

DistEnv from_openmpi(const Vars& vars) {
  DistEnv e;
  e.launcher = Launcher::kOpenMPI;
  long long world = vars.require_int("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK");
  e.world_size = at_least(vars, "OMPI_COMM_WORLD_SIZE", world, 1);
  e.rank = index_in(vars, "OMPI_COMM_WORLD_RANK", *vars.get_int("OMPI_COMM_WORLD_RANK"), world,
                    bound("OMPI_COMM_WORLD_SIZE", world));
  e.local_world_size = vars.has("OMPI_COMM_WORLD_LOCAL_SIZE")
                           ? at_least(vars, "OMPI_COMM_WORLD_LOCAL_SIZE", *vars.get_int("OMPI_COMM_WORLD_LOCAL_SIZE"), 1)
                           : e.world_size;
  long long local_rank = vars.get_int("OMPI_COMM_WORLD_LOCAL_RANK").value_or(e.rank % e.local_world_size);
  finish_layout(vars, e, "OMPI_COMM_WORLD_LOCAL_RANK", local_rank, "OMPI_COMM_WORLD_LOCAL_SIZE");
  // MPI has no rendezvous host of its own: one node may use loopback, several must say
  if (!vars.has("MASTER_ADDR") && e.local_world_size < e.world_size)
    fail(ErrorKind::kInvalidArgument, "MASTER_ADDR is not set: an OpenMPI job across nodes (OMPI_COMM_WORLD_SIZE=" +
                                          std::to_string(e.world_size) + ", OMPI_COMM_WORLD_LOCAL_SIZE=" +
                                          std::to_string(e.local_world_size) + ") needs the address of rank 0's host");
  read_master(vars, e);
  return e;
}

bool is_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool is_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

// One bracket's content "001-004,007": checks every item, returns the first item's low end.
std::string first_of_range(std::string_view list, std::string_view body) {
  std::string first;
  size_t start = 0;
  while (true) {
    size_t comma = body.find(',', start);
    std::string_view item = body.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t dash = item.find('-');
    std::string_view lo = item.substr(0, dash);
    std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
    if (!is_digits(lo) || !is_digits(hi) || lo.size() > 18 || hi.size() > 18)
      fail(ErrorKind::kInvalidArgument,
           "bad range '" + std::string(item) + "' in hostlist '" + std::string(list) + "' (expected N or N-M)");
    if (std::stoll(std::string(lo)) > std::stoll(std::string(hi)))
      fail(ErrorKind::kInvalidArgument,
           "range '" + std::string(item) + "' in hostlist '" + std::string(list) + "' runs backwards");
    if (first.empty()) first = std::string(lo);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return first;
}

}  // namespace

const char* launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::kSingle: return "single";
    case Launcher::kTorchrun: return "torchrun";
    case Launcher::kSlurm: return "slurm";
    case Launcher::kOpenMPI: return "openmpi";
  }
  return "unknown";
}

EnvLookup process_env() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

EnvLookup map_env(std::map<std::string, std::string, std::less<>> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

DistEnv detect_dist_env(const EnvLookup& env) {
  Vars vars(env);
  if (vars.has("RANK") || vars.has("WORLD_SIZE")) return from_torchrun(vars);
  if (vars.has("SLURM_PROCID")) return from_slurm(vars);
  if (vars.has("OMPI_COMM_WORLD_RANK")) return from_openmpi(vars);
  DistEnv e;
  read_master(vars, e);
  return e;
}

std::string slurm_first_host(std::string_view nodelist) {
  std::string_view s = nodelist;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  std::string host;
  for (size_t i = 0; i < s.size() && s[i] != ','; ++i) {
    char c = s[i];
    if (c == '[') {
      size_t close = s.find(']', i);
      size_t nested = s.find('[', i + 1);
      if (close == std::string_view::npos || (nested != std::string_view::npos && nested < close))
        fail(ErrorKind::kInvalidArgument, "unbalanced '[' in hostlist '" + std::string(nodelist) + "'");
      host += first_of_range(nodelist, s.substr(i + 1, close - i - 1));
      i = close;
    } else if (is_host_char(c)) {
      host += c;
    } else {
      fail(ErrorKind::kInvalidArgument,
           "unexpected '" + std::string(1, c) + "' in hostlist '" + std::string(nodelist) + "'");
    }
  }
  if (host.empty()) fail(ErrorKind::kInvalidArgument, "empty first host in hostlist '" + std::string(nodelist) + "'");
  return host;
}

std::vector<int> slurm_tasks_per_node(std::string_view text) {
  auto bad = [&] {
    fail(ErrorKind::kInvalidArgument, "expected counts like '2(x3),1', got '" + std::string(text) + "'");
  };
  std::vector<int> out;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::string_view count = item, repeat = "1";
    if (size_t paren = item.find("(x"); paren != std::string_view::npos) {
      if (item.back() != ')') bad();
      count = item.substr(0, paren);
      repeat = item.substr(paren + 2, item.size() - paren - 3);
    }
    if (!is_digits(count) || !is_digits(repeat) || count.size() > 6 || repeat.size() > 6) bad();
    int n = std::stoi(std::string(count)), times = std::stoi(std::string(repeat));
    if (n < 1 || times < 1 || out.size() + size_t(times) > 1000000) bad();
    out.insert(out.end(), size_t(times), n);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string describe(const DistEnv& env) {
  return std::string(launcher_name(env.launcher)) + ": rank " + std::to_string(env.rank) + " of " +
         std::to_string(env.world_size) + " (local " + std::to_string(env.local_rank) + " of " +
         std::to_string(env.local_world_size) + ", node " + std::to_string(env.node_rank) + " of " +
         std::to_string(env.num_nodes) + "), master " + env.master_addr + ":" + std::to_string(env.master_port);
}

}  // namespace ember::dist
