# Video encoding and joining tests (included from tests/CMakeLists.txt). Linked against
# ember_video only, so they build without the Parquet code.
add_executable(video_encode_test video_encode_test.cc)
target_link_libraries(video_encode_test PRIVATE ember_video ember_core GTest::gtest GTest::gtest_main)
target_compile_definitions(video_encode_test PRIVATE EMBER_TEST_DATA="${EMBER_TEST_DATA}")
ember_target_defaults(video_encode_test)
gtest_discover_tests(video_encode_test DISCOVERY_TIMEOUT 60 PROPERTIES LABELS cpu)
