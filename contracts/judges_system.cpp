// Judges of what the env's processes get from the system: libraries the
// loader resolves, device nodes, tools on PATH, the C library.
#include <algorithm>
#include <sstream>

#include "common/pep440.hpp"
#include "contracts/judges.hpp"
#include "contracts/values.hpp"

namespace envcontract::contracts::judges {
namespace {

template <typename Entry, typename Key>
const Entry* find_by(const std::vector<Entry>& entries, Key Entry::*key, const Key& value) {
  const auto found = std::find_if(entries.begin(), entries.end(),
                                  [&](const Entry& entry) { return entry.*key == value; });
  return found == entries.end() ? nullptr : &*found;
}

}  // namespace

namespace {

// Marks `result` unknown when what was looked up under the activated
// environment is (its activation failed or did not run): true then.
bool activated_lookups_unknown(const EnvFactsView& facts, CheckResult& result) {
  const std::string why = facts.activated_environment_unknown();
  if (!why.empty()) {
    not_gathered(result, "what the activated env finds is not known: " + why);
  }
  return !why.empty();
}

}  // namespace

void libraries(const Check&, const LibrariesParams& params, const EnvFactsView& facts,
               CheckResult& result) {
  Json actual = Json::object();
  const auto forbid = [&](const std::string& name, const facts::LibraryLookup& lookup) {
    const std::string path = lookup.path.string();
    result.actual = actual;
    fail(result, "forbidden_library",
         name + " is found at " + path + " (through " + lookup.found_via +
             "); the contract forbids it",
         {{"library", name}, {"path", path}, {"found_via", lookup.found_via}},
         "remove it from the env's library path, or uninstall the package that ships it");
  };
  if (!facts.activated_environment_unknown().empty()) {
    // A forbidden library the loader finds through its cache or its default
    // directories is found whatever activation puts before them: still a
    // fault. The rest was looked up in the wrong environment.
    for (const auto& name : params.absent) {
      const auto* lookup =
          find_by(facts.facts().library_lookups, &facts::LibraryLookup::name, name);
      if (lookup != nullptr && lookup->incomplete.empty() && !lookup->path.empty() &&
          (lookup->found_via == "ld.so.cache" || lookup->found_via == "system")) {
        forbid(name, *lookup);
        return;
      }
    }
    activated_lookups_unknown(facts, result);
    return;
  }
  const auto look_up = [&](const std::string& name) -> const facts::LibraryLookup* {
    const auto* lookup = find_by(facts.facts().library_lookups, &facts::LibraryLookup::name, name);
    actual[name] =
        lookup == nullptr || lookup->path.empty() ? Json(nullptr) : Json(lookup->path.string());
    if (lookup == nullptr) {
      result.actual = actual;
      not_gathered(result, "where the loader finds " + name + " was not looked up");
    } else if (!lookup->incomplete.empty()) {
      // Neither found nor missing: no verdict either way.
      result.actual = actual;
      not_gathered(result, "where the loader finds " + name + " is unknown: " + lookup->incomplete);
      return nullptr;
    }
    return lookup;
  };
  for (const auto& name : params.present) {
    const auto* lookup = look_up(name);
    if (lookup == nullptr) {
      return;
    }
    if (lookup->path.empty()) {
      const Json lookup_json = to_json(*lookup);
      const auto& others = lookup->other_versions;
      std::string summary = name + " cannot be found by the env's loader";
      if (!others.empty()) {
        summary += "; a different version exists: " + others.front().string();
      }
      result.actual = actual;
      fail(result, "missing_library", summary,
           {{"library", name},
            {"searched", lookup->searched},
            {"other_versions", lookup_json["other_versions"]}},
           "install the package that provides " + name +
               ", or put its directory on LD_LIBRARY_PATH in the env's activate.d script");
      return;
    }
  }
  for (const auto& name : params.absent) {
    const auto* lookup = look_up(name);
    if (lookup == nullptr) {
      return;
    }
    if (!lookup->path.empty()) {
      forbid(name, *lookup);
      return;
    }
  }
  result.actual = actual;
  pass(result);
}

void device_nodes(const Check&, const DeviceNodesParams& params, const EnvFactsView& facts,
                  CheckResult& result) {
  const std::string& pattern = params.glob;
  const auto* nodes = find_by(facts.facts().device_nodes, &facts::DeviceNodes::glob, pattern);
  if (nodes == nullptr) {
    not_gathered(result, pattern + " was not looked for on this host");
    return;
  }
  const auto count = static_cast<std::int64_t>(nodes->matches.size());
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
  if (activated_lookups_unknown(facts, result)) {
    return;
  }
  const auto& variables = facts.environment(facts::Activation::activated);
  const auto path_variable = variables.find("PATH");
  const std::string path = path_variable == variables.end() ? "" : path_variable->second;
  Json actual = Json::object();
  std::string missing;
  for (const auto& name : params.on_path) {
    const auto* lookup = find_by(facts.facts().tools, &facts::ToolLookup::name, name);
    if (lookup == nullptr) {
      result.actual = actual;
      not_gathered(result, name + " was not looked up in this env");
      return;
    }
    const std::string& found = lookup->path;
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
  const auto& glibc = facts.facts().glibc;
  const std::string& version = glibc.version;
  const std::string& wanted = params.min_version;
  result.actual = version.empty() ? Json(nullptr) : Json(version);
  if (version.empty()) {
    result.status = CheckStatus::error;
    result.diagnosis = Diagnosis{"probe_error",
                                 "the C library's version is unknown: " + glibc.problem,
                                 {{"glibc", to_json(glibc)}},
                                 ""};
    return;
  }
  const auto order = common::compare_versions(version, wanted);
  if (order && *order < 0) {
    fail(result, "glibc_too_old",
         "glibc " + version + " (" + glibc.path.string() + "), the contract wants >= " + wanted,
         {{"version", version}, {"path", glibc.path.string()}},
         "run the env on an image whose glibc is " + wanted + " or newer");
    return;
  }
  pass(result);
}

}  // namespace envcontract::contracts::judges
