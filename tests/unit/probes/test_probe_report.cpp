// The probe's report is written where env code can reach it: parsing must
// survive anything and trust nothing after a malformed line.
#include "probes/probe_report.hpp"

#include <gtest/gtest.h>

#include "facts/stage_names.hpp"
#include "process/small_files.hpp"

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
  EXPECT_EQ(process::text_field(record, "module"), "5");
  EXPECT_EQ(process::text_field(record, "error"), "[1,\"x\"]");
  EXPECT_EQ(process::text_field(record, "none"), "");
  EXPECT_EQ(process::text_field(record, "absent"), "");
  EXPECT_EQ(process::text_field(Json::array(), "module"), "");
}

// Records are typed once, where they are read: judges meet no JSON. What
// env code could have written wrongly is absent, never an exception.
TEST(ProbeReport, RecordsAreTypedWithWrongTypesAbsent) {
  const auto report = parse_probe_report(
      "{\"type\":\"start\",\"schema_version\":1}\n"
      "{\"type\":\"import\",\"module\":\"torch_fl\",\"ok\":false,"
      "\"error_type\":\"ImportError\",\"error\":\"libbkcl.so: cannot open\","
      "\"warnings\":[\"w\",3],\"seconds\":0.5}\n"
      "{\"type\":\"import\",\"module\":5,\"ok\":\"yes\",\"file\":[1]}\n"
      "{\"type\":\"devices\",\"expression\":\"n()\",\"value\":18446744073709551615}\n"
      "{\"type\":\"devices\",\"expression\":\"n()\",\"value\":8}\n"
      "{\"type\":\"torch\",\"version\":\"2.10.0+cpu\",\"cuda\":null}\n"
      "{\"type\":\"command\",\"run\":\"true\",\"exit_code\":4294967296}\n"
      "{\"type\":\"end\"}\n");
  ASSERT_EQ(report.error, "");
  ASSERT_EQ(report.records.size(), 6U);
  const auto& failed = report.records[0];
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(failed.error_type, "ImportError");
  EXPECT_EQ(failed.warnings, std::vector<std::string>{"w"});
  EXPECT_EQ(failed.seconds, 0.5);
  const auto& odd = report.records[1];
  EXPECT_EQ(odd.module, "");
  EXPECT_FALSE(odd.ok) << "only a JSON true is success";
  EXPECT_FALSE(odd.file.has_value());
  EXPECT_FALSE(report.records[2].value.has_value()) << "beyond 64 bits is no device count";
  EXPECT_EQ(report.records[3].value, 8);
  EXPECT_EQ(report.records[4].version, "2.10.0+cpu");
  EXPECT_FALSE(report.records[4].cuda.has_value()) << "torch.version.cuda is None";
  EXPECT_FALSE(report.records[5].exit_code.has_value());
}

// A stage's time comes from its end record, which env code can write too:
// a time no stage takes is no time, not an overflow when made milliseconds.
TEST(ProbeReport, AStageTimeNoStageCanTakeIsUnknown) {
  auto seconds_of = [](const std::string& value) {
    return parse_probe_report(
               "{\"type\":\"start\",\"schema_version\":1}\n"
               "{\"type\":\"end\",\"seconds\":" +
               value + "}\n")
        .seconds;
  };
  EXPECT_EQ(seconds_of("2.5"), 2.5);
  EXPECT_EQ(seconds_of("1e300"), -1);
  EXPECT_EQ(seconds_of("-3"), -1);
  EXPECT_EQ(seconds_of("\"7\""), -1);
  EXPECT_EQ(seconds_of("1e400"), -1);
}

// The JSON form keeps what each type of record carries, the fail-fast
// stop's blocker too.
TEST(ProbeReport, RecordsKeepTheirFieldsInJson) {
  facts::ProbeRecord stop;
  stop.type = facts::stage_names::fail_fast_stop;
  stop.blocked_by = "preflight";
  EXPECT_EQ(facts::to_json(stop)["blocked_by"], "preflight");
  facts::ProbeRecord import;
  import.type = "import";
  import.module = "torch";
  import.ok = true;
  import.realpath = "/env/lib/python3.10/site-packages/torch/__init__.py";
  const auto json = facts::to_json(import);
  EXPECT_EQ(json["module"], "torch");
  EXPECT_EQ(json["ok"], true);
  EXPECT_EQ(json["realpath"], "/env/lib/python3.10/site-packages/torch/__init__.py");
  EXPECT_EQ(facts::probe_record_from_json(json).realpath, import.realpath);
}

}  // namespace
}  // namespace envcontract::probes
