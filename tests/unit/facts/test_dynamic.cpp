// facts/dynamic.cpp: what running an env's code showed, typed, and its JSON.
#include "facts/dynamic.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "common/json_text.hpp"
#include "facts/stage_names.hpp"

namespace envcontract::facts {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> keys_of(const Json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) {
    keys.push_back(key);
  }
  return keys;
}

// The JSON as it leaves the process (common::json_text), read back: its
// parser refuses anything that is not JSON or not UTF-8.
Json sent_and_read(const Json& json) {
  const std::string text = common::json_text(json);
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    ADD_FAILURE() << "not valid JSON/UTF-8: " << e.what();
    return nullptr;
  }
}

const std::vector<StageStatus> k_statuses = {
    StageStatus::ok,          StageStatus::failed,  StageStatus::crashed, StageStatus::hung,
    StageStatus::probe_error, StageStatus::stopped, StageStatus::skipped};

TEST(DynamicFacts, EachStageStatusHasANameOfItsOwn) {
  std::set<std::string> names;
  for (const auto status : k_statuses) {
    names.insert(to_string(status));
  }
  EXPECT_EQ(names, (std::set<std::string>{"ok", "failed", "crashed", "hung", "probe_error",
                                          "stopped", "skipped"}));
}

// A stage that was not told how it ended has not exited, whatever its
// default exit code says.
TEST(DynamicFacts, AProcessExitedOnlyWhenItsEndSaysSo) {
  const ProcessEnd unknown;
  EXPECT_FALSE(unknown.exited());
  EXPECT_FALSE(unknown.exited_with(unknown.exit_code));
  const ProcessEnd exited{ProcessEnd::How::exited, 3, 0};
  EXPECT_TRUE(exited.exited());
  EXPECT_TRUE(exited.exited_with(3));
  EXPECT_FALSE(exited.exited_with(0));
  for (const auto how :
       {ProcessEnd::How::in_fork, ProcessEnd::How::signaled, ProcessEnd::How::timed_out,
        ProcessEnd::How::cancelled, ProcessEnd::How::failed_to_start}) {
    const ProcessEnd ended{how, 0, 9};
    EXPECT_FALSE(ended.exited()) << static_cast<int>(how);
    EXPECT_FALSE(ended.exited_with(0)) << static_cast<int>(how);
  }
}

TEST(DynamicFacts, AStageIsWrittenFieldByFieldInItsOrder) {
  StageResult stage;
  stage.stage = stage_names::smoke("first-op");
  stage.activation = Activation::bare;
  stage.status = StageStatus::crashed;
  stage.summary = "killed by SIGSEGV in import torch_xpu";
  stage.process = "killed by SIGSEGV";
  stage.end = {ProcessEnd::How::signaled, -1, 11};
  stage.stdout_tail = "loading\n";
  stage.stderr_tail = "Segmentation fault\n";
  stage.duration = 1234ms;
  ProbeRecord record;
  record.type = "smoke";
  record.ok = true;
  record.output = "3";
  stage.records = {record};
  const Json json = to_json(stage);
  EXPECT_EQ(keys_of(json), (std::vector<std::string>{"stage", "activation", "status", "summary",
                                                     "process", "duration_ms", "records",
                                                     "stdout_tail", "stderr_tail", "hang"}));
  EXPECT_EQ(json["stage"], "smoke:first-op");
  EXPECT_EQ(json["activation"], to_string(Activation::bare));
  EXPECT_EQ(json["status"], to_string(StageStatus::crashed));
  EXPECT_EQ(json["process"], "killed by SIGSEGV");
  EXPECT_EQ(json["duration_ms"], 1234);
  ASSERT_EQ(json["records"].size(), 1U);
  EXPECT_EQ(json["records"][0], to_json(record));
  EXPECT_EQ(json["stderr_tail"], "Segmentation fault\n");
  EXPECT_TRUE(json["hang"].is_null()) << "no hang: null, not an empty diagnosis";
}

HangDiagnosis spinning() {
  HangDiagnosis hang;
  hang.classification = "spin";
  hang.threads = {{4242, "python", 'R', 99.96, ""},
                  {4243, "xpu_worker", 'S', 0.04, "futex_do_wait"}};
  hang.busiest_tid = 4242;
  hang.native_stack = {{"xpu_wait", "libxpurt.so.1"}, {"", "libc.so.6"}};
  hang.python_stacks = "Thread 0x1 (most recent call first):\n  File \"x.py\", line 1\n";
  hang.summary = "1 of 2 threads running at ~100% CPU in xpu_wait (libxpurt.so.1)";
  return hang;
}

TEST(DynamicFacts, AHangIsWrittenWithItsThreadsAndTheBusiestThreadsStack) {
  StageResult stage;
  stage.status = StageStatus::hung;
  stage.hang = spinning();
  const Json json = to_json(stage)["hang"];
  EXPECT_EQ(json, to_json(spinning()));
  EXPECT_EQ(keys_of(json),
            (std::vector<std::string>{"classification", "summary", "busiest_tid", "native_stack",
                                      "native_stack_problem", "python_stacks", "threads"}));
  EXPECT_EQ(json["classification"], "spin");
  EXPECT_EQ(json["busiest_tid"], 4242);
  ASSERT_EQ(json["native_stack"].size(), 2U);
  EXPECT_EQ(json["native_stack"][0],
            Json({{"function", "xpu_wait"}, {"library", "libxpurt.so.1"}}));
  EXPECT_EQ(json["native_stack"][1]["function"], "") << "an unknown symbol is empty, kept";
  ASSERT_EQ(json["threads"].size(), 2U);
  const Json& busiest = json["threads"][0];
  EXPECT_EQ(keys_of(busiest),
            (std::vector<std::string>{"tid", "name", "state", "cpu_percent", "wchan"}));
  EXPECT_EQ(busiest["tid"], 4242);
  EXPECT_EQ(busiest["state"], "R") << "the state letter as a string";
  EXPECT_DOUBLE_EQ(busiest["cpu_percent"].get<double>(), 100.0) << "to a tenth";
  EXPECT_DOUBLE_EQ(json["threads"][1]["cpu_percent"].get<double>(), 0.0);
  EXPECT_EQ(json["threads"][1]["wchan"], "futex_do_wait");
}

TEST(DynamicFacts, AHangWithoutAStackSaysWhy) {
  HangDiagnosis hang;
  hang.classification = "blocked";
  hang.native_stack_problem = "ptrace: Operation not permitted";
  const Json json = to_json(hang);
  EXPECT_TRUE(json["native_stack"].is_array());
  EXPECT_TRUE(json["native_stack"].empty());
  EXPECT_TRUE(json["threads"].is_array());
  EXPECT_EQ(json["native_stack_problem"], "ptrace: Operation not permitted");
}

// A CPU share no sampling gives (a clock that went back, a zero interval)
// still makes JSON that reads back.
TEST(DynamicFacts, ACpuShareThatIsNoNumberStillMakesJson) {
  HangDiagnosis hang;
  hang.threads = {{1, "a", 'R', std::numeric_limits<double>::quiet_NaN(), ""},
                  {2, "b", 'R', std::numeric_limits<double>::infinity(), ""}};
  const Json read = sent_and_read(to_json(hang));
  ASSERT_EQ(read["threads"].size(), 2U);
  for (const auto& thread : read["threads"]) {
    EXPECT_TRUE(thread["cpu_percent"].is_null()) << common::json_text(thread);
  }
}

TEST(DynamicFacts, AnActivationArtifactNamesBothOutcomes) {
  const ActivationArtifact artifact{stage_names::imports.data(), StageStatus::failed,
                                    StageStatus::ok, "works only when activated: import torch_xpu"};
  const Json json = to_json(artifact);
  EXPECT_EQ(keys_of(json), (std::vector<std::string>{"stage", "bare", "activated", "summary"}));
  EXPECT_EQ(json["stage"], "imports");
  EXPECT_EQ(json["bare"], to_string(StageStatus::failed));
  EXPECT_EQ(json["activated"], to_string(StageStatus::ok));
  EXPECT_EQ(json["summary"], "works only when activated: import torch_xpu");
}

TEST(DynamicFacts, AllOfAnEnvsDynamicFactsAreWrittenTogether) {
  DynamicFacts facts;
  StageResult identity;
  identity.stage = stage_names::identity.data();
  identity.status = StageStatus::ok;
  StageResult imports;
  imports.stage = stage_names::imports.data();
  imports.status = StageStatus::hung;
  imports.hang = spinning();
  facts.stages = {identity, imports};
  facts.artifacts = {
      {"imports", StageStatus::failed, StageStatus::ok, "works only when activated"}};
  Json json = to_json(facts);
  EXPECT_EQ(keys_of(json), (std::vector<std::string>{"stages", "activation_artifacts", "refused"}));
  ASSERT_EQ(json["stages"].size(), 2U);
  EXPECT_EQ(json["stages"][0], to_json(identity));
  EXPECT_EQ(json["stages"][1]["hang"]["classification"], "spin");
  EXPECT_EQ(json["activation_artifacts"][0], to_json(facts.artifacts[0]));
  EXPECT_TRUE(json["refused"].is_null()) << "its code was not refused";

  facts.refused = CodeRefusal{CodeRefusal::Kind::unsafe_permissions,
                              "none of this env's code runs: anyone can write its lib"};
  facts.stages.clear();
  json = to_json(facts);
  EXPECT_EQ(json["refused"], "none of this env's code runs: anyone can write its lib");
  EXPECT_TRUE(json["stages"].is_array());
  EXPECT_TRUE(json["stages"].empty());
}

// Each type of record carries its own fields; those written read back as
// they were.
TEST(DynamicFacts, EachTypeOfRecordWritesItsFieldsAndReadsBack) {
  ProbeRecord failed_import;
  failed_import.type = "import";
  failed_import.module = "torch_fl";
  failed_import.error_type = "ImportError";
  failed_import.error = "libbkcl.so: cannot open shared object file";
  failed_import.traceback = "Traceback (most recent call last):\n";
  failed_import.warnings = {"UserWarning: x"};
  failed_import.stderr_text = "dlopen failed\n";
  failed_import.seconds = 0.25;
  failed_import.file = "/never/written/for/a/failed/import.py";

  ProbeRecord torch;
  torch.type = "torch";
  torch.version = "2.10.0+cpu";
  torch.file = "/env/lib/python3.10/site-packages/torch/__init__.py";

  ProbeRecord device_count;
  device_count.type = "devices";
  device_count.expression = "torch.xpu.device_count()";
  device_count.value = 8;

  ProbeRecord smoke;
  smoke.type = "smoke";
  smoke.ok = false;
  smoke.error_type = "RuntimeError";
  smoke.error = "no device";
  smoke.output = "partial\n";

  ProbeRecord search_path;
  search_path.type = "search_path";
  search_path.entries = {"/env/lib/python3.10", "/env/lib/python3.10/site-packages"};
  search_path.version = "3.10.13";

  ProbeRecord command;
  command.type = "command";
  command.run = "xpu-smi discovery";
  command.exit_code = 127;
  command.output = "xpu-smi: not found\n";

  {
    const Json json = to_json(failed_import);
    EXPECT_EQ(keys_of(json),
              (std::vector<std::string>{"type", "module", "ok", "error_type", "error", "traceback",
                                        "warnings", "stderr", "seconds"}))
        << "a failed import has no file";
    const auto read = probe_record_from_json(json);
    EXPECT_EQ(read.module, "torch_fl");
    EXPECT_FALSE(read.ok);
    EXPECT_EQ(read.error, failed_import.error);
    EXPECT_EQ(read.traceback, failed_import.traceback);
    EXPECT_EQ(read.warnings, failed_import.warnings);
    EXPECT_EQ(read.stderr_text, "dlopen failed\n");
    EXPECT_EQ(read.seconds, 0.25);
    EXPECT_FALSE(read.file.has_value());
  }
  {
    const Json json = to_json(torch);
    EXPECT_EQ(keys_of(json), (std::vector<std::string>{"type", "version", "cuda", "hip", "file"}));
    EXPECT_TRUE(json["cuda"].is_null()) << "torch.version.cuda is None: null, not \"\"";
    const auto read = probe_record_from_json(json);
    EXPECT_EQ(read.version, torch.version);
    EXPECT_EQ(read.cuda, std::nullopt);
    EXPECT_EQ(read.file, torch.file);
  }
  {
    const Json json = to_json(device_count);
    EXPECT_EQ(keys_of(json), (std::vector<std::string>{"type", "expression", "value"}))
        << "a value: no error";
    EXPECT_EQ(probe_record_from_json(json).value, 8);
    ProbeRecord no_value = device_count;
    no_value.value.reset();
    no_value.error_type = "AttributeError";
    const Json without = to_json(no_value);
    EXPECT_TRUE(without["value"].is_null());
    EXPECT_EQ(without["error_type"], "AttributeError") << "no value: why";
  }
  {
    const Json json = to_json(smoke);
    EXPECT_EQ(json["ok"], false);
    EXPECT_EQ(json["error"], "no device");
    EXPECT_TRUE(json["seconds"].is_null());
    const auto read = probe_record_from_json(json);
    EXPECT_EQ(read.output, "partial\n");
    EXPECT_EQ(read.error_type, "RuntimeError");
    EXPECT_FALSE(read.seconds.has_value());
  }
  {
    const auto read = probe_record_from_json(to_json(search_path));
    EXPECT_EQ(read.entries, search_path.entries);
    EXPECT_EQ(read.version, "3.10.13");
  }
  {
    const Json json = to_json(command);
    EXPECT_EQ(keys_of(json), (std::vector<std::string>{"type", "run", "exit_code", "output"}));
    const auto read = probe_record_from_json(json);
    EXPECT_EQ(read.exit_code, 127);
    EXPECT_EQ(read.run, "xpu-smi discovery");
    ProbeRecord killed = command;
    killed.exit_code.reset();
    EXPECT_TRUE(to_json(killed)["exit_code"].is_null()) << "it did not exit: no status";
  }
  ProbeRecord other;
  other.type = "not-a-type-we-know";
  other.module = "m";
  EXPECT_EQ(to_json(other), Json({{"type", "not-a-type-we-know"}}));
}

// An exit status is an int: a JSON integer beyond 63 bits (an unsigned one,
// 2^64 - 1) is no exit status and is absent, as 2^32 is, never wrapped to -1.
TEST(DynamicFacts, AnExitCodeBeyondAnyIntIsAbsent) {
  for (const char* code : {"4294967296", "18446744073709551615", "18446744073709551614"}) {
    const auto read = probe_record_from_json(Json::parse(
        std::string(R"({"type": "command", "run": "true", "exit_code": )") + code + "}"));
    EXPECT_FALSE(read.exit_code.has_value()) << code << " read as " << read.exit_code.value_or(0);
  }
}

// Everything a stage carries from the env's processes is the env's to
// write: bytes that are not UTF-8, control characters, NULs, quotes and
// markup. The JSON made of it is JSON and UTF-8 all the same, and what was
// text reads back as it was.
TEST(DynamicFacts, TextFromTheEnvComesOutAsValidJson) {
  const std::string text = std::string("tab\there \"quoted\" \\ </script>\x1b[2J nul:") +
                           std::string(1, '\0') + " caf\xc3\xa9 \xe2\x9c\x93";
  const std::string not_utf8 = "bad \xff\xfe byte, cut \xe2\x9c";
  StageResult stage;
  stage.stage = "smoke:" + text;
  stage.summary = text + not_utf8;
  stage.process = not_utf8;
  stage.stdout_tail = text;
  stage.stderr_tail = not_utf8;
  ProbeRecord record;
  record.type = "import";
  record.module = not_utf8;
  record.error = text;
  record.traceback = not_utf8;
  record.warnings = {not_utf8, text};
  record.stderr_text = not_utf8;
  stage.records = {record};
  HangDiagnosis hang = spinning();
  hang.threads[0].name = not_utf8;  // a thread names itself (prctl)
  hang.threads[0].state = '\xff';
  hang.threads[1].wchan = text;
  hang.native_stack[0].function = not_utf8;
  hang.python_stacks = text + not_utf8;
  hang.summary = not_utf8;
  stage.hang = hang;
  DynamicFacts facts;
  facts.stages = {stage};
  facts.artifacts = {{stage.stage, StageStatus::ok, StageStatus::failed, not_utf8}};
  facts.refused = CodeRefusal{CodeRefusal::Kind::imports_unchecked, not_utf8};

  const Json read = sent_and_read(to_json(facts));
  ASSERT_FALSE(read.is_null());
  const Json& written = read["stages"][0];
  EXPECT_EQ(written["stage"], "smoke:" + text) << "valid text is kept byte for byte";
  EXPECT_EQ(written["stdout_tail"], text);
  EXPECT_EQ(written["records"][0]["error"], text);
  EXPECT_EQ(written["records"][0]["warnings"][1], text);
  EXPECT_EQ(written["hang"]["threads"][1]["wchan"], text);
  // Bytes that are no UTF-8 become U+FFFD; the rest of the string stays.
  const std::string replaced = written["stderr_tail"].get<std::string>();
  EXPECT_EQ(replaced.rfind("bad ", 0), 0U) << replaced;
  EXPECT_NE(replaced.find("\xef\xbf\xbd"), std::string::npos) << replaced;
  EXPECT_NE(replaced.find(" byte, cut "), std::string::npos) << replaced;
  EXPECT_EQ(written["hang"]["threads"][0]["name"], replaced);
  EXPECT_EQ(written["hang"]["threads"][0]["state"], "\xef\xbf\xbd");
  EXPECT_EQ(written["records"][0]["module"], replaced);
  EXPECT_EQ(read["activation_artifacts"][0]["summary"], replaced);
  EXPECT_EQ(read["refused"], replaced);
}

}  // namespace
}  // namespace envcontract::facts
