# Simulation tests (src/ember/sim): need the sim layer (-DEMBER_SIM=ON and libmujoco-dev).
# Rendering tests skip with the reason when OSMesa is missing.
if(TARGET ember_sim)
  function(ember_sim_test name)
    add_executable(${name} ${ARGN})
    target_link_libraries(${name} PRIVATE ember_sim ember_data GTest::gtest GTest::gtest_main)
    target_compile_definitions(${name} PRIVATE EMBER_TEST_DATA="${EMBER_TEST_DATA}")
    ember_target_defaults(${name})
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS cpu
                         ENVIRONMENT "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/sim_lsan.supp")
  endfunction()
  ember_sim_test(sim_env_test sim_env_test.cc)
  ember_sim_test(sim_expert_test sim_expert_test.cc)
  ember_sim_test(sim_render_test sim_render_test.cc)
endif()
