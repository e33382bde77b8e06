// The job's layout from torchrun, Slurm and OpenMPI variables; Slurm hostlists.
#include <gtest/gtest.h>

#include "ember/core/error.h"
#include "ember/dist/env.h"

namespace ember::dist {
namespace {

using Vars = std::map<std::string, std::string, std::less<>>;

DistEnv detect(Vars vars) { return detect_dist_env(map_env(std::move(vars))); }

// The message of the kInvalidArgument error that detecting `vars` throws ("" if none).
std::string error_of(Vars vars) {
  try {
    detect(std::move(vars));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    return e.what();
  }
  return "";
}

// Checks that detection fails with a message containing every one of `parts`.
void expect_error(Vars vars, std::initializer_list<std::string> parts) {
  std::string msg = error_of(vars);
  ASSERT_FALSE(msg.empty()) << "no error";
  for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(DistEnv, NothingSetIsOneProcess) {
  DistEnv e = detect({});
  EXPECT_EQ(e.launcher, Launcher::kSingle);
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.world_size, 1);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.local_world_size, 1);
  EXPECT_FALSE(e.is_distributed());
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  EXPECT_EQ(e.master_port, 29500);
}

TEST(DistEnv, Torchrun) {
  DistEnv e = detect({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"},
                      {"GROUP_RANK", "1"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "1234"}});
  EXPECT_EQ(e.launcher, Launcher::kTorchrun);
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.node_rank, 1);
  EXPECT_EQ(e.num_nodes, 2);
  EXPECT_EQ(e.master_addr, "10.0.0.1");
  EXPECT_EQ(e.master_port, 1234);
  EXPECT_TRUE(e.is_distributed());
  EXPECT_EQ(describe(e), "torchrun: rank 5 of 8 (local 1 of 4, node 1 of 2), master 10.0.0.1:1234");
}

TEST(DistEnv, TorchrunDefaultsToOneNodeOnLoopback) {
  DistEnv e = detect({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.num_nodes, 1);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  EXPECT_EQ(e.master_port, 29500);
}

TEST(DistEnv, TorchrunDerivesLocalRankAndNode) {
  DistEnv e = detect({{"RANK", "7"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "h0"}});
  EXPECT_EQ(e.local_rank, 3);
  EXPECT_EQ(e.node_rank, 1);
  EXPECT_EQ(e.num_nodes, 2);
}

TEST(DistEnv, EmptyValueCountsAsUnset) {
  DistEnv e = detect({{"RANK", ""}, {"WORLD_SIZE", ""}, {"MASTER_PORT", ""}});
  EXPECT_EQ(e.launcher, Launcher::kSingle);
  EXPECT_EQ(e.master_port, 29500);
}

TEST(DistEnv, Slurm) {
  DistEnv e = detect({{"SLURM_PROCID", "6"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "2"},
                      {"SLURM_NTASKS_PER_NODE", "4"}, {"SLURM_NODEID", "1"}, {"SLURM_NNODES", "2"},
                      {"SLURM_JOB_NODELIST", "node[001-004,007],gpu12"}, {"SLURM_JOB_ID", "123456"}});
  EXPECT_EQ(e.launcher, Launcher::kSlurm);
  EXPECT_EQ(e.rank, 6);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 2);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.node_rank, 1);
  EXPECT_EQ(e.num_nodes, 2);
  EXPECT_EQ(e.master_addr, "node001");
  EXPECT_EQ(e.master_port, 20000 + 123456 % 20000);
}

TEST(DistEnv, SlurmTasksPerNodeListPicksThisNode) {
  DistEnv e = detect({{"SLURM_PROCID", "6"}, {"SLURM_NTASKS", "7"}, {"SLURM_LOCALID", "0"},
                      {"SLURM_TASKS_PER_NODE", "3(x2),1"}, {"SLURM_NODEID", "2"}, {"SLURM_NNODES", "3"},
                      {"SLURM_JOB_NODELIST", "a,b,c"}});
  EXPECT_EQ(e.local_world_size, 1);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.node_rank, 2);
  EXPECT_EQ(e.num_nodes, 3);
  EXPECT_EQ(e.master_addr, "a");
  EXPECT_EQ(e.master_port, 29500);  // no SLURM_JOB_ID
}

TEST(DistEnv, SlurmMasterVariablesOverride) {
  DistEnv e = detect({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n[1-2]"},
                      {"SLURM_JOB_ID", "7"}, {"MASTER_ADDR", "10.1.1.1"}, {"MASTER_PORT", "4000"}});
  EXPECT_EQ(e.master_addr, "10.1.1.1");
  EXPECT_EQ(e.master_port, 4000);
}

TEST(DistEnv, SlurmWithoutNodeListOnOneNodeUsesLoopback) {
  DistEnv e = detect({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
}

TEST(DistEnv, OpenMPI) {
  DistEnv e = detect({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                      {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                      {"MASTER_ADDR", "head"}, {"MASTER_PORT", "29400"}});
  EXPECT_EQ(e.launcher, Launcher::kOpenMPI);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.node_rank, 1);
  EXPECT_EQ(e.num_nodes, 2);
  EXPECT_EQ(e.master_addr, "head");
  EXPECT_EQ(e.master_port, 29400);
}

TEST(DistEnv, OpenMPIOnOneNodeUsesLoopback) {
  DistEnv e = detect({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                      {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(e.master_addr, "127.0.0.1");
}

TEST(DistEnv, PrecedenceTorchrunThenSlurmThenOpenMPI) {
  Vars all{{"RANK", "1"},         {"WORLD_SIZE", "2"},   {"SLURM_PROCID", "0"},         {"SLURM_NTASKS", "1"},
           {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}};
  EXPECT_EQ(detect(all).launcher, Launcher::kTorchrun);
  all.erase("RANK");
  all.erase("WORLD_SIZE");
  EXPECT_EQ(detect(all).launcher, Launcher::kSlurm);
  all.erase("SLURM_PROCID");
  EXPECT_EQ(detect(all).launcher, Launcher::kOpenMPI);
  all.erase("OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(detect(all).launcher, Launcher::kSingle);
}

TEST(DistEnv, TorchrunErrorsNameTheVariable) {
  expect_error({{"RANK", "abc"}, {"WORLD_SIZE", "2"}}, {"RANK=abc", "not an integer"});
  expect_error({{"RANK", "1x"}, {"WORLD_SIZE", "2"}}, {"RANK=1x", "not an integer"});
  expect_error({{"RANK", " 1"}, {"WORLD_SIZE", "2"}}, {"RANK= 1", "not an integer"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "99999999999999999999"}}, {"WORLD_SIZE=99999999999999999999", "range"});
  expect_error({{"RANK", "2"}, {"WORLD_SIZE", "2"}}, {"RANK=2", "[0, WORLD_SIZE=2)"});
  expect_error({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}, {"RANK=-1"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "0"}}, {"WORLD_SIZE=0", "at least 1"});
  expect_error({{"RANK", "0"}}, {"WORLD_SIZE is not set"});
  expect_error({{"WORLD_SIZE", "2"}}, {"RANK is not set"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}}, {"LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "4"}}, {"LOCAL_WORLD_SIZE=4", "larger"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "0"}}, {"LOCAL_WORLD_SIZE=0"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}, {"GROUP_RANK", "2"}}, {"GROUP_RANK=2"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}}, {"MASTER_ADDR is not set"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "70000"}}, {"MASTER_PORT=70000", "port"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "0"}}, {"MASTER_PORT=0", "port"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "http"}}, {"MASTER_PORT=http", "not an integer"});
}

TEST(DistEnv, SlurmErrorsNameTheVariable) {
  expect_error({{"SLURM_PROCID", "0"}}, {"SLURM_NTASKS is not set"});
  expect_error({{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}}, {"SLURM_PROCID=x", "not an integer"});
  expect_error({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}, {"SLURM_PROCID=4", "SLURM_NTASKS=4"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "2"}, {"SLURM_NTASKS_PER_NODE", "2"},
                {"SLURM_JOB_NODELIST", "a"}},
               {"SLURM_LOCALID=2", "SLURM_NTASKS_PER_NODE=2"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_TASKS_PER_NODE", "2(x2"},
                {"SLURM_JOB_NODELIST", "a"}},
               {"SLURM_TASKS_PER_NODE=2(x2"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}, {"SLURM_NODEID", "2"},
                {"SLURM_JOB_NODELIST", "a"}},
               {"SLURM_NODEID=2"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "node[1-"}},
               {"SLURM_JOB_NODELIST=node[1-", "unbalanced"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "abc"}}, {"SLURM_JOB_ID=abc"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_NNODES", "2"}},
               {"MASTER_ADDR", "SLURM_JOB_NODELIST", "2 nodes"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"MASTER_PORT", "65536"}}, {"MASTER_PORT=65536"});
}

TEST(DistEnv, OpenMPIErrorsNameTheVariable) {
  expect_error({{"OMPI_COMM_WORLD_RANK", "0"}}, {"OMPI_COMM_WORLD_SIZE is not set"});
  expect_error({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
               {"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=2"});
  expect_error({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}},
               {"MASTER_ADDR is not set"});
  expect_error({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "q"}},
               {"OMPI_COMM_WORLD_LOCAL_RANK=q"});
}

TEST(DistEnv, ProcessEnvReadsTheEnvironment) {
  ::setenv("EMBER_DIST_ENV_TEST_VAR", "42", 1);
  EXPECT_EQ(process_env()("EMBER_DIST_ENV_TEST_VAR"), "42");
  ::unsetenv("EMBER_DIST_ENV_TEST_VAR");
  EXPECT_EQ(process_env()("EMBER_DIST_ENV_TEST_VAR"), std::nullopt);
}

TEST(SlurmHostlist, FirstHost) {
  EXPECT_EQ(slurm_first_host("node[001-004,007],gpu12"), "node001");
  EXPECT_EQ(slurm_first_host("a,b"), "a");
  EXPECT_EQ(slurm_first_host("gpu-[3-5]-ib"), "gpu-3-ib");
  EXPECT_EQ(slurm_first_host("single"), "single");
  EXPECT_EQ(slurm_first_host("r[1-2]n[07-08]"), "r1n07");
  EXPECT_EQ(slurm_first_host("n[7]"), "n7");
  EXPECT_EQ(slurm_first_host("n[09,10-12],m1"), "n09");
  EXPECT_EQ(slurm_first_host("  host.example.org  "), "host.example.org");
  EXPECT_EQ(slurm_first_host("node[1-2],bad[x]"), "node1");  // only the first host is read
}

TEST(SlurmHostlist, MalformedListsThrow) {
  for (const char* bad : {"", ",a", "node[1-", "node[]", "node[a-b]", "node[5-3]", "node[1-2", "node]1",
                          "n[1[2]]", "node 1", "node[1-2-3]"}) {
    EXPECT_THROW(slurm_first_host(bad), Error) << bad;
  }
}

TEST(SlurmHostlist, TasksPerNode) {
  EXPECT_EQ(slurm_tasks_per_node("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(slurm_tasks_per_node("4"), (std::vector<int>{4}));
  EXPECT_EQ(slurm_tasks_per_node("1,2,3"), (std::vector<int>{1, 2, 3}));
  for (const char* bad : {"", "x", "2(x)", "2(3)", "2(x3", "0", "2,,1"}) EXPECT_THROW(slurm_tasks_per_node(bad), Error) << bad;
}

}  // namespace
}  // namespace ember::dist
