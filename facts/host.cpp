#include "facts/host.hpp"

namespace envcontract::facts {

std::string Stall::message() const {
  std::string text;
  if (too_many) {
    return what + " not read: " + std::to_string(k_max_blocked_readers) +
           " readers of this agent are blocked already (filesystems that do not answer)";
  }
  if (!same_filesystem.empty()) {
    return what + " not started: it is on " + same_filesystem +
           " in this scan: a filesystem there does not answer (a FUSE server, a dead network "
           "mount)";
  }
  if (!cut_short.empty()) {
    text = what + " was cut short (" + cut_short + ") while its reader was blocked";
  } else if (from_earlier) {
    text = what + " not read: the reader started at " + since + " is still blocked";
  } else {
    text = what + " did not finish within " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(deadline).count()) +
           (running ? " s: its reader is still working" : " s: its reader is blocked");
  }
  std::string where = system_call;
  if (!kernel_wait.empty()) {
    where += (where.empty() ? "" : ", ") + std::string("asleep in ") + kernel_wait;
  }
  if (!where.empty() && !running) {
    text += " in the kernel (" + where + ")";
  }
  if (!last_path.empty()) {
    text += ", reading " + last_path;
  }
  return text + (running ? ": a filesystem there is very slow, or the env very large"
                         : ": a filesystem there does not answer (a FUSE server, a dead network "
                           "mount)");
}

Json to_json(const ImageTag& tag) {
  return {{"value", tag.value}, {"source", tag.source}, {"problem", tag.problem}};
}

std::string to_string(FactError::Stage stage) {
  switch (stage) {
    case FactError::Stage::reading:
      return "reading";
    case FactError::Stage::activation:
      return "activation";
    case FactError::Stage::static_facts:
      return "static facts";
    case FactError::Stage::import_check:
      return "import check";
    case FactError::Stage::linkage:
      return "linkage";
    case FactError::Stage::requested_facts:
      return "requested facts";
    case FactError::Stage::dynamic_probe:
      return "dynamic probe";
  }
  return "reading";
}

Json to_json(const FactError& error) {
  Json json = {{"stage", to_string(error.stage)}, {"message", error.message}};
  if (error.stall) {
    const auto& stall = *error.stall;
    const auto text = [](const std::string& value) {
      return value.empty() ? Json(nullptr) : Json(value);
    };
    json["stalled"] = {
        {"path", text(stall.last_path)},
        {"system_call", text(stall.system_call)},
        {"kernel_wait", text(stall.kernel_wait)},
        {"since", text(stall.since)},
        {"deadline_s", std::chrono::duration_cast<std::chrono::seconds>(stall.deadline).count()},
        {"from_earlier_scan", stall.from_earlier}};
  }
  return json;
}

Json refused_files_json(const EnvFacts& env) {
  auto refused = Json::array();
  for (const auto& problem : env.refused_files) {
    refused.push_back(to_json(problem));
  }
  if (env.more_refused_files > 0) {
    refused.push_back(
        {{"path", "..."},
         {"problem", std::to_string(env.more_refused_files) + " more files refused, not listed"}});
  }
  return refused;
}

Json to_json(const EnvFacts& env) {
  Json json = to_json(env.env);
  json["static"] = to_json(env.static_facts);
  json["activation"] = to_json(env.activation);
  json["linkage"] = {{"activated", to_json(env.linkage)},
                     {"bare", env.bare_linkage ? to_json(*env.bare_linkage) : Json(nullptr)}};
  const auto all = [](const auto& items) {
    auto array = Json::array();
    for (const auto& item : items) {
      array.push_back(to_json(item));
    }
    return array;
  };
  json["library_lookups"] = all(env.library_lookups);
  json["path_matches"] = all(env.path_matches);
  json["tool_lookups"] = all(env.tools);
  json["device_nodes"] = all(env.device_nodes);
  json["glibc"] = to_json(env.glibc);
  json["refused_files"] = refused_files_json(env);
  json["fact_errors"] = all(env.errors);
  if (env.dynamic) {
    json["dynamic"] = to_json(*env.dynamic);
    json["probed_at"] = env.probed_at;
  }
  return json;
}

Json to_json(const ContainerFacts& container) {
  return {{"name", container.name},
          {"root", container.root},
          {"exec", container.exec},
          {"image", to_json(container.image)},
          {"problem", container.problem.empty() ? Json(nullptr) : Json(container.problem)}};
}

Json to_json(const HostFacts& facts) {
  auto envs = Json::array();
  for (const auto& env : facts.envs) {
    envs.push_back(to_json(env));
  }
  auto problems = Json::array();
  for (const auto& problem : facts.problems) {
    problems.push_back({{"path", problem.path.string()}, {"problem", problem.problem}});
  }
  auto containers = Json::array();
  for (const auto& container : facts.containers) {
    containers.push_back(to_json(container));
  }
  return {{"schema_version", 1},
          {"host", facts.host},
          {"gathered_at", facts.gathered_at},
          {"timing_ms",
           {{"static", static_cast<double>(facts.static_elapsed.count()) / 1000.0},
            {"activation", static_cast<double>(facts.activation_elapsed.count()) / 1000.0},
            {"linkage", static_cast<double>(facts.linkage_elapsed.count()) / 1000.0}}},
          {"image", to_json(facts.image)},
          {"containers", containers},
          {"problems", problems},
          {"incomplete", facts.incomplete},
          {"envs", envs}};
}

}  // namespace envcontract::facts
