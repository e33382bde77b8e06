// Where this process sits in a distributed job, read from the environment that launchers
// set: torchrun (and `ember launch`), Slurm's srun, or OpenMPI's mpirun. The trainer turns a
// DistEnv into a c10d process group (TCPStore at master_addr:master_port); nothing here needs
// libtorch.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::dist {

// Which launcher's variables described the job.
enum class Launcher {
  kSingle,    // none found: one process, rank 0 of 1
  kTorchrun,  // RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR/PORT
  kSlurm,     // SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, ... (srun)
  kOpenMPI,   // OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE (mpirun)
};
const char* launcher_name(Launcher launcher);  // "single", "torchrun", "slurm", "openmpi"

struct DistEnv {
  Launcher launcher = Launcher::kSingle;
  int rank = 0;              // global rank, in [0, world_size)
  int world_size = 1;        // number of processes in the job
  int local_rank = 0;        // rank on this node, in [0, local_world_size); picks the GPU
  int local_world_size = 1;  // processes on this node
  int node_rank = 0;         // this node's index, in [0, num_nodes)
  int num_nodes = 1;
  std::string master_addr = "127.0.0.1";  // host of rank 0's TCPStore
  int master_port = 29500;                // its port, in [1, 65535]

  bool is_distributed() const { return world_size > 1; }
};

// Looks up one environment variable; std::nullopt when unset. Tests inject a map.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
// The process's environment (getenv). Not safe against concurrent setenv.
EnvLookup process_env();
// A fixed set of variables (tests).
EnvLookup map_env(std::map<std::string, std::string, std::less<>> vars);

// Reads the job's layout. Precedence: torchrun variables (RANK or WORLD_SIZE set) > Slurm
// (SLURM_PROCID set) > OpenMPI (OMPI_COMM_WORLD_RANK set) > a single process. A variable set
// to the empty string counts as unset. MASTER_ADDR / MASTER_PORT, when set, override what a
// launcher implies:
//   torchrun: MASTER_ADDR defaults to 127.0.0.1 when all ranks are on one node, else it is
//             required; MASTER_PORT defaults to 29500. LOCAL_RANK / LOCAL_WORLD_SIZE default
//             to RANK / WORLD_SIZE (one node); GROUP_RANK to RANK / LOCAL_WORLD_SIZE.
//   Slurm:    SLURM_NTASKS required; local size from SLURM_NTASKS_PER_NODE, else this node's
//             entry of SLURM_TASKS_PER_NODE ("2(x3),1"), picked by SLURM_NODEID; master is the
//             first host of SLURM_JOB_NODELIST (or SLURM_NODELIST); MASTER_PORT defaults to
//             20000 + SLURM_JOB_ID % 20000, else 29500.
//   OpenMPI:  OMPI_COMM_WORLD_SIZE required; MASTER_ADDR required unless every rank is on
//             this node (OMPI_COMM_WORLD_LOCAL_SIZE == OMPI_COMM_WORLD_SIZE); node rank is
//             rank / local size (by-slot mapping).
// Throws Error kInvalidArgument naming the variable and its value when one does not parse
// (integers only, whole string) or is out of range (rank outside [0, world), a port outside
// [1, 65535], a local size larger than the world, a malformed hostlist).
DistEnv detect_dist_env(const EnvLookup& env = process_env());

// The first host of a Slurm hostlist: "node[001-004,007],gpu12" -> "node001", "a,b" -> "a",
// "gpu-[3-5]-ib" -> "gpu-3-ib", "r[1-2]n[07-08]" -> "r1n07" (zero padding kept). Throws Error
// kInvalidArgument naming the list when it is empty or malformed (unbalanced brackets, a
// range that is not digits, low > high).
std::string slurm_first_host(std::string_view nodelist);

// Expands Slurm's SLURM_TASKS_PER_NODE form "2(x3),1" to {2, 2, 2, 1}. Throws Error
// kInvalidArgument naming the text when malformed.
std::vector<int> slurm_tasks_per_node(std::string_view text);

// One line for logs: "torchrun: rank 3 of 8 (local 1 of 4, node 0 of 2), master 10.0.0.1:29500".
std::string describe(const DistEnv& env);

}  // namespace ember::dist
