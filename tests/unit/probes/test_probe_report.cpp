// The probe's report is written where env code can reach it: parsing must
// survive anything and trust nothing after a malformed line.
#include "probes/probe_report.hpp"

#include <gtest/gtest.h>

#include "probes/small_files.hpp"

namespace envcontract::probes {
namespace {

TEST(ProbeReport, ReadsAWellFormedReport) {
  const auto report = parse_probe_report(
      "{\"type\":\"start\",\"schema_version\":1,\"stage\":\"imports\"}\n"
      "{\"type\":\"import\",\"module\":\"torch\",\"ok\":true}\n"
      "\n"
      "{\"type\":\"end\"}\n");
  EXPECT_TRUE(report.started);
  EXPECT_TRUE(report.ended);
  EXPECT_EQ(report.error, "");
  ASSERT_EQ(report.records.size(), 1U);
  EXPECT_EQ(report.records[0].module, "torch");
}

TEST(ProbeReport, StopsTrustingAtTheFirstMalformedLine) {
  const auto report = parse_probe_report(
      "{\"type\":\"start\",\"schema_version\":1}\n"
      "[1, 2]\n"
      "{\"type\":\"end\"}\n");
  EXPECT_EQ(report.error, "malformed probe output at line 2: [1, 2]");
  EXPECT_FALSE(report.ended);
  EXPECT_EQ(parse_probe_report("{\"type\": 7}\n").error,
            "malformed probe output at line 1: {\"type\": 7}");
  EXPECT_EQ(parse_probe_report("{\"type\":\"start\",\"schema_version\":\"1\"}\n").error,
            "probe output has an unknown schema_version at line 1");
  EXPECT_EQ(parse_probe_report("{\"type\":\"start\",\"schema_version\":2}\n").error,
            "probe output has an unknown schema_version at line 1");
  EXPECT_FALSE(parse_probe_report(std::string("\0\xff{", 3)).error.empty());
}

TEST(ProbeReport, FieldsOfTheWrongTypeAreTextNotExceptions) {
  const auto record = Json::parse(R"({"module": 5, "error": [1, "x"], "none": null})");
  EXPECT_EQ(text_field(record, "module"), "5");
  EXPECT_EQ(text_field(record, "error"), "[1,\"x\"]");
  EXPECT_EQ(text_field(record, "none"), "");
  EXPECT_EQ(text_field(record, "absent"), "");
  EXPECT_EQ(text_field(Json::array(), "module"), "");
}

}  // namespace
}  // namespace envcontract::probes
