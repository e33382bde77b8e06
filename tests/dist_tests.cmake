# Distributed-job plumbing without libtorch (included from tests/CMakeLists.txt): the job's
# layout from the environment, the local launcher, `ember launch`, and two "hosts" in network
# namespaces.
function(ember_dist_test name lib)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE ${lib} GTest::gtest GTest::gtest_main)
  ember_target_defaults(${name})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS cpu TIMEOUT 60)
endfunction()
ember_dist_test(dist_env_test ember_dist_env dist_env_test.cc)
ember_dist_test(dist_launcher_test ember_dist_launcher dist_launcher_test.cc)

# `ember launch` through the binary: flag errors, exit codes, `ember` resolving to itself,
# signals sent to the launcher.
ember_dist_test(dist_launch_cli_test ember_core dist_launch_cli_test.cc)
target_compile_definitions(dist_launch_cli_test PRIVATE EMBER_BINARY="$<TARGET_FILE:ember>")
add_dependencies(dist_launch_cli_test ember)

# Two "hosts" (network namespaces joined by a veth pair) each run `ember launch` for one node
# of a two-node job. Needs root and iproute2; exits 77 (skipped) where it cannot.
add_test(NAME dist_netns_two_hosts
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/netns_launch_test.sh $<TARGET_FILE:ember>
                 ${CMAKE_CURRENT_SOURCE_DIR}/tools/netns_two_hosts.sh)
set_tests_properties(dist_netns_two_hosts PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 60)
