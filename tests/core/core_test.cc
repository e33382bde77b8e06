// core: JSON files (nesting bound, atomic writes), --device values, progress lines.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "ember/core/device.h"
#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/core/output_dir.h"
#include "ember/core/progress.h"
#include "test_util.h"

namespace ember {
namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonFile, DeepNestingIsRefusedNamingTheFileNotACrash) {
  test::TempDir dir;
  const std::string path = dir.path() + "/info.json";
  std::ofstream(path) << std::string(50000, '[') << std::string(50000, ']');
  auto message = error_of([&] { read_json_file(path); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("nested"), std::string::npos) << message;
}

TEST(JsonFile, BracketsInsideStringsDoNotCountAsNesting) {
  const std::string deep_in_string = "{\"a\": \"" + std::string(1000, '[') + "\", \"b\": [[1]]}";
  EXPECT_NO_THROW(check_json_depth(deep_in_string, "<test>"));
  auto j = parse_json(deep_in_string, "<test>");
  EXPECT_EQ(j["b"][0][0].get<int>(), 1);
}

TEST(JsonFile, AnErrorInALongStringQuotesOnlyItsEnd) {
  // an unterminated 5000-character string: the parser's "last read" would quote all of it
  auto message = error_of([&] { parse_json("{\"rng\": \"" + std::string(5000, 'a'), "trainer_state.json"); });
  EXPECT_NE(message.find("trainer_state.json: not valid JSON"), std::string::npos) << message;
  EXPECT_LT(message.size(), 300u) << message;
}

TEST(JsonFile, WriteIsAtomicAndReadsBack) {
  test::TempDir dir;
  const std::string path = dir.path() + "/state.json";
  write_json_file(path, nlohmann::json{{"step", 5}});
  EXPECT_EQ(read_json_file(path)["step"].get<int>(), 5);
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename(), "state.json") << "a temporary file was left behind";
  auto message = error_of([&] { read_json_file(dir.path() + "/missing.json"); });
  EXPECT_NE(message.find("missing.json"), std::string::npos) << message;
  std::ofstream(dir.path() + "/bad.json") << "{\"a\": ";
  message = error_of([&] { read_json_file(dir.path() + "/bad.json"); });
  EXPECT_NE(message.find("bad.json"), std::string::npos) << message;
}

TEST(Device, FlagValuesResolveOrAreRefusedNamingTheFlag) {
  EXPECT_EQ(resolve_device_kind("auto", false), DeviceKind::kCpu);
  EXPECT_EQ(resolve_device_kind("auto", true), DeviceKind::kCuda);
  EXPECT_EQ(resolve_device_kind("", true), DeviceKind::kCuda);
  EXPECT_EQ(resolve_device_kind("cpu", true), DeviceKind::kCpu);
  EXPECT_EQ(resolve_device_kind("cuda", true), DeviceKind::kCuda);
  EXPECT_NE(error_of([] { resolve_device_kind("cuda", false); }).find("--device=cuda: no CUDA device"), std::string::npos);
  EXPECT_NE(error_of([] { resolve_device_kind("gpu", true, "--eval.device"); }).find("--eval.device: expected auto, cuda or cpu"),
            std::string::npos);
}

TEST(OutputDir, AbsentOrEmptyOnly) {
  test::TempDir dir;
  EXPECT_NO_THROW(check_output_dir(dir.path() + "/new", "--output_dir"));
  EXPECT_NO_THROW(check_output_dir(dir.path(), "--output_dir"));
  std::ofstream(dir.path() + "/file") << "x";
  EXPECT_NE(error_of([&] { check_output_dir(dir.path(), "--output_dir"); }).find("not empty"), std::string::npos);
  EXPECT_NE(error_of([&] { check_output_dir(dir.path() + "/file", "--output_dir"); }).find("not a directory"), std::string::npos);
}

TEST(Progress, PlainOutputPrintsAtMostElevenLinesAndAFinalOne) {
  std::FILE* f = std::tmpfile();
  {
    Progress p("checking files", 1000, f, /*tty=*/0);
    for (int i = 1; i <= 1000; ++i) p.update(i);
    p.finish("ok");
  }
  std::rewind(f);
  int lines = 0;
  std::string last;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f)) ++lines, last = buf;
  std::fclose(f);
  EXPECT_LE(lines, 12);
  EXPECT_GE(lines, 10);
  EXPECT_NE(last.find("checking files  1000/1000  ok"), std::string::npos) << last;
}

}  // namespace
}  // namespace ember
