#include "facts/dynamic.hpp"

#include <cmath>
#include <cstdint>

#include "facts/stage_names.hpp"

namespace envcontract::facts {
namespace {

std::string text_of(const Json& json, const char* key) {
  const auto it = json.find(key);
  return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<std::string> optional_text(const Json& json, const char* key) {
  const auto it = json.find(key);
  return it != json.end() && it->is_string() ? std::optional(it->get<std::string>()) : std::nullopt;
}

std::vector<std::string> texts_of(const Json& json, const char* key) {
  std::vector<std::string> texts;
  const auto it = json.find(key);
  if (it != json.end() && it->is_array()) {
    for (const auto& item : *it) {
      if (item.is_string()) {
        texts.push_back(item.get<std::string>());
      }
    }
  }
  return texts;
}

Json optional_json(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

}  // namespace

ProbeRecord probe_record_from_json(const Json& json) {
  ProbeRecord record;
  if (!json.is_object()) {
    return record;
  }
  record.type = text_of(json, "type");
  record.module = text_of(json, "module");
  const auto ok = json.find("ok");
  record.ok = ok != json.end() && ok->is_boolean() && ok->get<bool>();
  record.error_type = text_of(json, "error_type");
  record.error = text_of(json, "error");
  record.traceback = text_of(json, "traceback");
  record.file = optional_text(json, "file");
  record.realpath = optional_text(json, "realpath");
  record.warnings = texts_of(json, "warnings");
  record.stderr_text = text_of(json, "stderr");
  if (const auto seconds = json.find("seconds");
      seconds != json.end() && seconds->is_number() && std::isfinite(seconds->get<double>())) {
    record.seconds = seconds->get<double>();
  }
  record.version = optional_text(json, "version");
  record.cuda = optional_text(json, "cuda");
  record.hip = optional_text(json, "hip");
  record.expression = text_of(json, "expression");
  // Python's int has no bound: a value beyond 64 bits is no device count.
  if (const auto value = json.find("value"); value != json.end()) {
    if (value->is_number_unsigned()) {
      if (value->get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX)) {
        record.value = static_cast<std::int64_t>(value->get<std::uint64_t>());
      }
    } else if (value->is_number_integer()) {
      record.value = value->get<std::int64_t>();
    }
  }
  record.output = text_of(json, "output");
  record.run = text_of(json, "run");
  // An unsigned number past INT64_MAX would wrap as int64 (2^64-1 read as
  // -1): what is not a valid exit code is absent, as for any field.
  if (const auto code = json.find("exit_code");
      code != json.end() && code->is_number_integer() &&
      (code->is_number_unsigned()
           ? code->get<std::uint64_t>() <= INT32_MAX
           : code->get<std::int64_t>() >= INT32_MIN && code->get<std::int64_t>() <= INT32_MAX)) {
    record.exit_code = static_cast<int>(code->get<std::int64_t>());
  }
  record.blocked_by = text_of(json, "blocked_by");
  record.entries = texts_of(json, "entries");
  return record;
}

Json to_json(const ProbeRecord& record) {
  Json json = {{"type", record.type}};
  const auto error = [&] {
    json["error_type"] = record.error_type;
    json["error"] = record.error;
    json["traceback"] = record.traceback;
  };
  const auto seconds = [&] {
    json["seconds"] = record.seconds ? Json(*record.seconds) : Json(nullptr);
  };
  if (record.type == "import") {
    json["module"] = record.module;
    json["ok"] = record.ok;
    if (record.ok) {
      json["file"] = optional_json(record.file);
      json["realpath"] = optional_json(record.realpath);
    } else {
      error();
    }
    json["warnings"] = record.warnings;
    json["stderr"] = record.stderr_text;
    seconds();
  } else if (record.type == "torch") {
    json["version"] = optional_json(record.version);
    json["cuda"] = optional_json(record.cuda);
    json["hip"] = optional_json(record.hip);
    json["file"] = optional_json(record.file);
  } else if (record.type == "torch_after_imports") {
    json["cuda"] = optional_json(record.cuda);
    json["hip"] = optional_json(record.hip);
  } else if (record.type == "devices") {
    json["expression"] = record.expression;
    json["value"] = record.value ? Json(*record.value) : Json(nullptr);
    if (!record.value) {
      error();
    }
  } else if (record.type == "smoke") {
    json["ok"] = record.ok;
    if (!record.ok) {
      error();
    }
    json["output"] = record.output;
    seconds();
  } else if (record.type == "search_path") {
    json["entries"] = record.entries;
    json["version"] = optional_json(record.version);
  } else if (record.type == "command") {
    json["run"] = record.run;
    json["exit_code"] = record.exit_code ? Json(*record.exit_code) : Json(nullptr);
    json["output"] = record.output;
  } else if (record.type == stage_names::fail_fast_stop) {
    json["blocked_by"] = record.blocked_by;
  }
  return json;
}

Json to_json(const HangDiagnosis& diagnosis) {
  auto frames = Json::array();
  for (const auto& frame : diagnosis.native_stack) {
    frames.push_back({{"function", frame.function}, {"library", frame.library}});
  }
  auto threads = Json::array();
  for (const auto& thread : diagnosis.threads) {
    threads.push_back({{"tid", thread.tid},
                       {"name", thread.name},
                       {"state", std::string(1, thread.state)},
                       {"cpu_percent", std::round(thread.cpu_percent * 10) / 10},
                       {"wchan", thread.wchan}});
  }
  return {{"classification", diagnosis.classification},
          {"summary", diagnosis.summary},
          {"busiest_tid", diagnosis.busiest_tid},
          {"native_stack", frames},
          {"native_stack_problem", diagnosis.native_stack_problem},
          {"python_stacks", diagnosis.python_stacks},
          {"threads", threads}};
}

std::string to_string(StageStatus status) {
  switch (status) {
    case StageStatus::ok:
      return "ok";
    case StageStatus::failed:
      return "failed";
    case StageStatus::crashed:
      return "crashed";
    case StageStatus::hung:
      return "hung";
    case StageStatus::probe_error:
      return "probe_error";
    case StageStatus::stopped:
      return "stopped";
    case StageStatus::skipped:
      break;
  }
  return "skipped";
}

Json to_json(const StageResult& stage) {
  auto records = Json::array();
  for (const auto& record : stage.records) {
    records.push_back(to_json(record));
  }
  return {{"stage", stage.stage},
          {"activation", to_string(stage.activation)},
          {"status", to_string(stage.status)},
          {"summary", stage.summary},
          {"process", stage.process},
          {"duration_ms", stage.duration.count()},
          {"records", records},
          {"stdout_tail", stage.stdout_tail},
          {"stderr_tail", stage.stderr_tail},
          {"hang", stage.hang ? to_json(*stage.hang) : Json(nullptr)}};
}

Json to_json(const ActivationArtifact& artifact) {
  return {{"stage", artifact.stage},
          {"bare", to_string(artifact.bare)},
          {"activated", to_string(artifact.activated)},
          {"summary", artifact.summary}};
}

Json to_json(const DynamicFacts& facts) {
  auto stages = Json::array();
  for (const auto& stage : facts.stages) {
    stages.push_back(to_json(stage));
  }
  auto artifacts = Json::array();
  for (const auto& artifact : facts.artifacts) {
    artifacts.push_back(to_json(artifact));
  }
  return {{"stages", stages},
          {"activation_artifacts", artifacts},
          {"refused", facts.refused ? Json(facts.refused->text) : Json(nullptr)}};
}

}  // namespace envcontract::facts
