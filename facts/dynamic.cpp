#include "facts/dynamic.hpp"

#include <cmath>

namespace envcontract::facts {

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
  return {{"stage", stage.stage},
          {"activation", to_string(stage.activation)},
          {"status", to_string(stage.status)},
          {"summary", stage.summary},
          {"process", stage.process},
          {"duration_ms", stage.duration.count()},
          {"records", stage.records},
          {"stdout_tail", stage.stdout_tail},
          {"stderr_tail", stage.stderr_tail},
          {"hang", stage.hang ? to_json(*stage.hang) : Json(nullptr)}};
}

Json to_json(const DynamicFacts& facts) {
  auto stages = Json::array();
  for (const auto& stage : facts.stages) {
    stages.push_back(to_json(stage));
  }
  auto artifacts = Json::array();
  for (const auto& artifact : facts.artifacts) {
    artifacts.push_back({{"stage", artifact.stage},
                         {"bare", to_string(artifact.bare)},
                         {"activated", to_string(artifact.activated)},
                         {"summary", artifact.summary}});
  }
  return {{"stages", stages},
          {"activation_artifacts", artifacts},
          {"refused", facts.refused.empty() ? Json(nullptr) : Json(facts.refused)}};
}

}  // namespace envcontract::facts
