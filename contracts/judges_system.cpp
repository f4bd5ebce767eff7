// Judges of what the env's processes get from the system: libraries the
// loader resolves, device nodes, tools on PATH, the C library.
#include <sstream>

#include "common/pep440.hpp"
#include "contracts/judges.hpp"
#include "contracts/values.hpp"

namespace envcontract::contracts::judges {
namespace {

const Json* find_lookup(const EnvFactsView& facts, const std::string& name) {
  return find_entry(array_field(facts.raw(), "library_lookups"), "name", name);
}

}  // namespace

void libraries(const Check&, const LibrariesParams& params, const EnvFactsView& facts,
               CheckResult& result) {
  Json actual = Json::object();
  const auto look_up = [&](const std::string& name) -> const Json* {
    const Json* lookup = find_lookup(facts, name);
    actual[name] =
        lookup != nullptr && lookup->contains("path") ? lookup->at("path") : Json(nullptr);
    if (lookup == nullptr) {
      result.actual = actual;
      not_gathered(result, "where the loader finds " + name + " was not looked up");
    }
    return lookup;
  };
  for (const auto& name : params.present) {
    const Json* lookup = look_up(name);
    if (lookup == nullptr) {
      return;
    }
    if (string_field(*lookup, "path").empty()) {
      const auto& others = array_field(*lookup, "other_versions");
      std::string summary = name + " cannot be found by the env's loader";
      if (!others.empty()) {
        summary += "; a different version exists: " + others.front().get<std::string>();
      }
      result.actual = actual;
      fail(result, "missing_library", summary,
           {{"library", name},
            {"searched", array_field(*lookup, "searched")},
            {"other_versions", others}},
           "install the package that provides " + name +
               ", or put its directory on LD_LIBRARY_PATH in the env's activate.d script");
      return;
    }
  }
  for (const auto& name : params.absent) {
    const Json* lookup = look_up(name);
    if (lookup == nullptr) {
      return;
    }
    const std::string path = string_field(*lookup, "path");
    if (!path.empty()) {
      result.actual = actual;
      fail(result, "forbidden_library",
           name + " is found at " + path + " (through " + string_field(*lookup, "found_via") +
               "); the contract forbids it",
           {{"library", name}, {"path", path}, {"found_via", string_field(*lookup, "found_via")}},
           "remove it from the env's library path, or uninstall the package that ships it");
      return;
    }
  }
  result.actual = actual;
  pass(result);
}

void device_nodes(const Check&, const DeviceNodesParams& params, const EnvFactsView& facts,
                  CheckResult& result) {
  const std::string& pattern = params.glob;
  const Json* nodes = find_entry(array_field(facts.raw(), "device_nodes"), "glob", pattern);
  if (nodes == nullptr) {
    not_gathered(result, pattern + " was not looked for on this host");
    return;
  }
  const auto count = static_cast<std::int64_t>(array_field(*nodes, "matches").size());
  result.actual = count;
  const auto& wanted = params.count;
  if (!wanted.holds_for(count)) {
    fail(result, "missing_device_nodes",
         pattern + " matches " + std::to_string(count) + " device node" + (count == 1 ? "" : "s") +
             ", the contract wants " + wanted.op + " " + std::to_string(wanted.value),
         {{"glob", pattern}, {"count", count}},
         "check that the driver is loaded and the devices are passed into the container "
         "(--device)");
    return;
  }
  pass(result);
}

void tools(const Check&, const ToolsParams& params, const EnvFactsView& facts,
           CheckResult& result) {
  const std::string path = string_field(facts.environment("activated"), "PATH");
  Json actual = Json::object();
  std::string missing;
  for (const auto& name : params.on_path) {
    const Json* lookup = find_entry(array_field(facts.raw(), "tool_lookups"), "name", name);
    if (lookup == nullptr) {
      result.actual = actual;
      not_gathered(result, name + " was not looked up in this env");
      return;
    }
    const std::string found = string_field(*lookup, "path");
    actual[name] = found.empty() ? Json(nullptr) : Json(found);
    if (found.empty() && missing.empty()) {
      missing = name;
    }
  }
  result.actual = actual;
  if (!missing.empty()) {
    fail(result, "missing_tool", missing + " is not on the PATH of the activated env",
         {{"tool", missing}, {"PATH", path}},
         "install the vendor's tools, or add their directory to PATH in the env's activation");
    return;
  }
  pass(result);
}

void glibc(const Check&, const GlibcParams& params, const EnvFactsView& facts,
           CheckResult& result) {
  const Json& glibc = facts.raw().contains("glibc") ? facts.raw().at("glibc") : Json::object();
  const std::string version = string_field(glibc, "version");
  const std::string& wanted = params.min_version;
  result.actual = version.empty() ? Json(nullptr) : Json(version);
  if (version.empty()) {
    result.status = CheckStatus::error;
    result.diagnosis =
        Diagnosis{"probe_error",
                  "the C library's version is unknown: " + string_field(glibc, "problem"),
                  {{"glibc", glibc}},
                  ""};
    return;
  }
  const auto order = common::compare_versions(version, wanted);
  if (order && *order < 0) {
    fail(result, "glibc_too_old",
         "glibc " + version + " (" + string_field(glibc, "path") +
             "), the contract wants >= " + wanted,
         {{"version", version}, {"path", string_field(glibc, "path")}},
         "run the env on an image whose glibc is " + wanted + " or newer");
    return;
  }
  pass(result);
}

}  // namespace envcontract::contracts::judges
