# Tests of ember_train_util (schedule, metrics, checkpoint directories, run configuration) and
# of the safetensors reader/writer (ember_io). Included from tests/CMakeLists.txt; no libtorch.
function(ember_train_util_test name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE ember_train_util ember_io GTest::gtest GTest::gtest_main)
  ember_target_defaults(${name})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS cpu)
endfunction()
ember_train_util_test(safetensors_test safetensors_test.cc)
ember_train_util_test(train_util_test train_util_test.cc)
ember_train_util_test(checkpoint_dir_test checkpoint_dir_test.cc)

# The safetensors library reads what ember writes and the other way round.
add_executable(safetensors_tool tools/safetensors_tool.cc)
target_link_libraries(safetensors_tool PRIVATE ember_io)
ember_target_defaults(safetensors_tool)
if(EMBER_PYTHON)
  add_test(NAME safetensors_interop
           COMMAND ${EMBER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/python/test_safetensors_interop.py
                   --tool $<TARGET_FILE:safetensors_tool>)
  set_tests_properties(safetensors_interop PROPERTIES LABELS "cpu;python" TIMEOUT 120)
endif()
