// Judges of what an env carries: torch's build, triton's provider, Python,
// distributions and modules.
#include <algorithm>
#include <filesystem>

#include "common/json_text.hpp"
#include "common/pep440.hpp"
#include "common/python_names.hpp"
#include "contracts/judges.hpp"
#include "contracts/other_python.hpp"

namespace envcontract::contracts::judges {
namespace {

bool satisfies_all(const std::string& version, const std::vector<VersionClause>& clauses) {
  return std::all_of(clauses.begin(), clauses.end(), [&](const VersionClause& clause) {
    return common::satisfies(version, clause.op, clause.version);
  });
}

std::string specifier_text(const std::vector<VersionClause>& clauses) {
  std::string text;
  for (const auto& clause : clauses) {
    text += (text.empty() ? "" : ",") + clause.op + clause.version;
  }
  return text;
}

// The distribution of that (normalised) name, pip's record first.
const facts::Distribution* find_distribution(const EnvFactsView& facts, const std::string& name) {
  const facts::Distribution* conda = nullptr;
  for (const auto& distribution : facts.files().distributions) {
    if (distribution.normalized != name) {
      continue;
    }
    if (distribution.source != "conda-meta") {
      return &distribution;
    }
    conda = &distribution;
  }
  return conda;
}

// Other pip records of the same distribution in the directory of `found`
// (a stale torch-2.1.2.dist-info beside torch-2.10.0.dist-info, left by an
// interrupted upgrade): which one a tool reads depends on directory order.
std::vector<const facts::Distribution*> stale_records(const EnvFactsView& facts,
                                                      const facts::Distribution& found) {
  std::vector<const facts::Distribution*> others;
  const auto dir = found.metadata.parent_path();
  for (const auto& distribution : facts.files().distributions) {
    if (&distribution != &found && distribution.normalized == found.normalized &&
        distribution.source != "conda-meta" && distribution.metadata.parent_path() == dir) {
      others.push_back(&distribution);
    }
  }
  return others;
}

// torch as the check sees it: its own view (the identity stage) when
// dynamic probes ran, else its files.
struct TorchView {
  std::optional<std::string> version;
  std::optional<std::string> cuda;
  std::optional<std::string> hip;
  std::string location;       // as the env sees it (inside its container or rootfs)
  std::string host_location;  // where the agent read it, when that differs
  std::string source;

  Json json() const {
    Json view = {{"version", optional_json(version)},
                 {"cuda", optional_json(cuda)},
                 {"hip", optional_json(hip)},
                 {"location", location}};
    if (!host_location.empty()) {
      view["host_location"] = host_location;
    }
    view["source"] = source;
    return view;
  }
};

TorchView torch_view(const EnvFactsView& facts) {
  const auto& files = facts.files().torch;
  const std::string read_at = files.location.string();
  const std::string seen = facts.seen_by_env(read_at);
  TorchView view{files.version, files.cuda, files.hip, seen, seen == read_at ? "" : read_at,
                 "files"};
  if (const auto* identity = facts.stage(facts::stage_names::identity)) {
    for (const auto& record : identity->records) {
      if (record.type == "torch") {
        view.version = record.version;
        view.cuda = record.cuda;
        view.hip = record.hip;
        view.source = "import torch";
      }
    }
  }
  return view;
}

// The toolkit rule ("cuda"/"hip": none, required, any, exact) against a value.
std::optional<std::pair<std::string, std::string>> toolkit_problem(
    const ToolkitRule& rule, const std::optional<std::string>& actual, const std::string& name,
    const std::string& version) {
  using Mode = ToolkitRule::Mode;
  if (rule.mode == Mode::none && actual) {
    return std::pair{name + "_build", (name == "cuda" ? "CUDA" : "HIP") +
                                          std::string(" build of torch (") + version +
                                          ", torch.version." + name + " == " + python_text(actual) +
                                          ") where the contract requires a CPU build"};
  }
  if ((rule.mode == Mode::required || rule.mode == Mode::exact) && !actual && name == "hip") {
    return std::pair{name + "_missing", "torch.version.hip is None: torch " + version +
                                            " is not a HIP (ROCm) build, which the contract needs"};
  }
  if ((rule.mode == Mode::required || rule.mode == Mode::exact) && !actual) {
    return std::pair{name + "_missing", "torch.version." + name +
                                            " is None: a CPU build of torch " + version +
                                            " where the contract needs " + name};
  }
  if (rule.mode == Mode::exact && actual && *actual != rule.version) {
    return std::pair{"version_mismatch", "torch.version." + name + " is " + python_text(actual) +
                                             ", the contract wants '" + rule.version + "'"};
  }
  return std::nullopt;
}

// The torch judged after importing vendor modules: their record of torch's
// view. False when that record is missing (the check is then skipped).
bool view_after_imports(const TorchParams& params, const EnvFactsView& facts, TorchView& view,
                        CheckResult& result) {
  if (params.after_import.empty()) {
    return true;
  }
  const auto* imports = facts.stage(facts::stage_names::imports);
  const auto* record = imports ? find_record(*imports, "torch_after_imports") : nullptr;
  if (record == nullptr) {
    result.status = CheckStatus::skip;
    result.actual = view.json();
    result.diagnosis = Diagnosis{"probe_error",
                                 "torch's view after importing the vendor modules is unknown: "
                                 "the imports stage did not get that far",
                                 Json::object(), "see the imports check"};
    return false;
  }
  view.cuda = record->cuda;
  view.hip = record->hip;
  view.source = "after importing " + common::json_text(Json(params.after_import));
  return true;
}

// A torch version "2.10.0+cu129" as its base and local parts.
struct TorchVersion {
  std::string full;
  std::string base;
  std::string local;

  explicit TorchVersion(const std::optional<std::string>& version)
      : full(version.value_or("")),
        base(full.substr(0, full.find('+'))),
        local(full.find('+') == std::string::npos ? "" : full.substr(full.find('+') + 1)) {}
};

// Whether the contract needs a CUDA build (then a CPU build is no remedy).
bool needs_cuda(const TorchParams& params) {
  return params.cuda && (params.cuda->mode == ToolkitRule::Mode::required ||
                         params.cuda->mode == ToolkitRule::Mode::exact);
}

std::string cpu_build_remedy(const TorchParams& params, const TorchVersion& version) {
  const std::string base = params.base.empty() ? version.base : params.base;
  return "install the CPU build of torch " + base + " in this env (pip install torch==" + base +
         " --index-url https://download.pytorch.org/whl/cpu)";
}

// The contract's version, base or local part against the torch found.
// False when it failed.
bool version_agrees(const TorchParams& params, const TorchView& view,
                    const facts::TorchFacts& torch_files, const TorchVersion& version,
                    const Json& evidence, CheckResult& result) {
  if ((params.version.empty() || version.full == params.version) &&
      (params.base.empty() || version.base == params.base) &&
      (params.local.empty() || version.local == params.local)) {
    return true;
  }
  const std::string wanted = !params.version.empty()
                                 ? params.version
                                 : params.base + (params.local.empty() ? "" : "+" + params.local);
  const bool cuda_local = params.local == "cpu" && version.local.starts_with("cu");
  // A torch that does not say its version is not the one wanted either:
  // what is missing is named, not an empty version.
  const bool known = !version.full.empty();
  const std::string actual =
      known ? "torch " + version.full
      : view.source == "files"
          ? "torch at " + view.location + " tells no version (" +
                (torch_files.problem.empty() ? "torch/version.py has no literal __version__"
                                             : torch_files.problem) +
                ")"
          : "torch, as " + view.source + " shows it, has no __version__";
  fail(result, cuda_local ? "cuda_build" : "version_mismatch",
       actual + ", the contract wants " + wanted, evidence,
       cuda_local ? cpu_build_remedy(params, version)
       : known    ? "install torch " + wanted + " in this env"
                  : "reinstall torch " + wanted +
                     " in this env: its install is incomplete or not "
                     "torch's own");
  return false;
}

// The contract's path rules. Paths are named as the env sees them: inside
// its container or rootfs, not where the agent read it (kept in the
// evidence). False when one failed.
bool paths_agree(const TorchParams& params, const TorchView& view, const Json& evidence,
                 CheckResult& result) {
  const std::string& location = view.location;
  for (const auto& forbidden : params.forbidden_paths) {
    if (location.starts_with(forbidden)) {
      fail(result, "forbidden_path",
           "torch resolves from " + location + ", under the forbidden " + forbidden, evidence,
           "install torch into this env itself; do not use the image's own torch");
      return false;
    }
  }
  const std::string file = location + "/__init__.py";  // torch.__file__
  for (const auto& part : params.forbidden_path_parts) {
    if (file.find(part) != std::string::npos) {
      fail(result, "forbidden_path",
           "torch resolves from " + file + ", which contains the forbidden '" + part + "'",
           evidence, "install the torch build the contract names into this env itself");
      return false;
    }
  }
  const auto& required = params.required_paths;
  if (!required.empty() &&
      std::none_of(required.begin(), required.end(),
                   [&](const std::string& prefix) { return location.starts_with(prefix); })) {
    fail(result, "outside_required_paths",
         "torch resolves from " + location + ", outside " + common::json_text(Json(required)),
         evidence, "install torch where the contract requires it");
    return false;
  }
  return true;
}

}  // namespace

void torch(const Check&, const TorchParams& params, const EnvFactsView& facts,
           CheckResult& result) {
  const auto& torch_files = facts.files().torch;
  if (!torch_files.present) {
    if (fail_if_installed_for_another_python(result, facts, "torch")) {
      return;
    }
    fail(result, "missing_package", "torch is not installed in " + facts.prefix(), Json::object(),
         "install torch as the contract requires, or exclude this env");
    return;
  }
  TorchView view = torch_view(facts);
  if (!view_after_imports(params, facts, view, result)) {
    return;
  }
  result.actual = view.json();
  const TorchVersion version(view.version);
  Json evidence = {{"version", optional_json(view.version)},
                   {"cuda", optional_json(view.cuda)},
                   {"hip", optional_json(view.hip)},
                   {"location", view.location},
                   {"libraries", torch_files.libraries}};
  if (!view.host_location.empty()) {
    evidence["host_location"] = view.host_location;
  }
  if (params.cuda) {
    if (auto problem = toolkit_problem(*params.cuda, view.cuda, "cuda", version.full)) {
      fail(result, problem->first, problem->second, evidence,
           problem->first == "cuda_build" ? cpu_build_remedy(params, version)
                                          : "install the torch build the contract names");
      return;
    }
  }
  if (params.hip) {
    if (auto problem = toolkit_problem(*params.hip, view.hip, "hip", version.full)) {
      fail(result, problem->first, problem->second, evidence,
           problem->first == "hip_build" && !needs_cuda(params)
               ? cpu_build_remedy(params, version)
               : "install the torch build the contract names");
      return;
    }
  }
  if (version_agrees(params, view, torch_files, version, evidence, result) &&
      paths_agree(params, view, evidence, result)) {
    pass(result);
  }
}

void triton(const Check&, const TritonParams& params, const EnvFactsView& facts,
            CheckResult& result) {
  const auto& triton_files = facts.files().triton;
  const std::string& wanted = params.provider;
  if (!triton_files.present) {
    if (fail_if_installed_for_another_python(result, facts, "triton")) {
      return;
    }
    fail(result, "missing_package", "triton is not installed in " + facts.prefix(), Json::object(),
         wanted.empty() ? "install triton" : "install " + wanted + ", which provides triton");
    return;
  }
  Json triton = to_json(triton_files);
  // Named as the env sees it, as torch's is.
  if (const std::string read_at = triton_files.location.string(), seen = facts.seen_by_env(read_at);
      seen != read_at) {
    triton["location"] = seen;
    triton["host_location"] = read_at;
  }
  result.actual = triton;
  const std::string& provider = triton_files.provider;
  const std::string& provider_version = triton_files.provider_version;
  if (!wanted.empty() && provider != wanted) {
    const bool stock = provider == "triton";
    fail(result, stock ? "stock_triton" : "version_mismatch",
         (provider.empty() ? std::string("an unknown distribution")
                           : provider + " " + provider_version) +
             " provides triton; the contract wants " + wanted,
         triton,
         "pip uninstall -y " + (provider.empty() ? std::string("triton") : provider) +
             " && pip install " + wanted + " (the vendor build)");
    return;
  }
  for (const auto& forbidden : params.forbid_distributions) {
    for (const auto& claimant : triton_files.providers) {
      if (claimant == forbidden) {
        fail(result, "stock_triton",
             forbidden + " is installed beside " + provider + " and also claims the triton package",
             triton, "pip uninstall -y " + forbidden);
        return;
      }
    }
  }
  if (!params.provider_version.empty() &&
      !satisfies_all(provider_version, params.provider_version)) {
    fail(result, "version_mismatch",
         provider + " " + provider_version + " does not satisfy " +
             specifier_text(params.provider_version),
         triton, "install " + provider + specifier_text(params.provider_version));
    return;
  }
  const std::string& prefix = params.version_prefix;
  const std::string version = triton_files.version.value_or("");
  if (!prefix.empty() && !version.starts_with(prefix)) {
    fail(result, "version_mismatch",
         "triton.__version__ is " + (version.empty() ? std::string("unknown") : version) +
             ", the contract wants " + prefix + "*",
         triton, "install the triton build the contract names");
    return;
  }
  std::vector<std::string> missing;
  for (const auto& backend : params.backends) {
    const auto& present = triton_files.backends;
    if (std::find(present.begin(), present.end(), backend) == present.end()) {
      missing.push_back(backend);
    }
  }
  if (!missing.empty()) {
    fail(result, "triton_backend_missing",
         "triton (" + provider + " " + provider_version + ") has backends " +
             common::json_text(Json(triton_files.backends)) + "; the contract needs " +
             common::json_text(Json(missing)),
         triton,
         "install the " + (wanted.empty() ? provider : wanted) + " build for this platform");
    return;
  }
  pass(result);
}

void python(const Check&, const PythonParams& params, const EnvFactsView& facts,
            CheckResult& result) {
  // The interpreter's word when it ran ("3.10.13"); else what its files say
  // ("3.10" from bin/python's name, when the records disagree with it).
  const std::string running = facts.interpreter_version();
  const std::string& version = running.empty() ? facts.python_version() : running;
  const std::string& conflict = facts.facts().env.python_version_conflict;
  result.actual = version;
  if (!satisfies_all(version, params.version)) {
    fail(result, "version_mismatch",
         "Python " + version + ", the contract wants " + specifier_text(params.version) +
             (conflict.empty() ? "" : " (" + conflict + ")"),
         {{"python_version", version},
          {"python_version_conflict", conflict.empty() ? Json(nullptr) : Json(conflict)}},
         "recreate the env with the Python the contract names");
    return;
  }
  pass(result);
}

void distributions(const Check&, const DistributionsParams& params, const EnvFactsView& facts,
                   CheckResult& result) {
  Json actual = Json::object();
  for (const auto& [name, clauses] : params.pins) {
    const auto* found = find_distribution(facts, name);
    actual[name] = found ? Json(found->version) : Json(nullptr);
    // conda-meta records what conda installed, for whichever Python: a
    // record of a package the interpreter cannot see (its files are under
    // another Python's site dir) is not the package installed.
    if (found != nullptr && found->source == "conda-meta" &&
        fail_if_installed_for_another_python(result, facts, name)) {
      result.actual = actual;
      return;
    }
    if (!found) {
      if (!fail_if_installed_for_another_python(result, facts, name)) {
        fail(result, "missing_package",
             name + " is not installed; the contract pins " + specifier_text(clauses),
             Json::object(), "pip install '" + name + specifier_text(clauses) + "'");
      }
    } else if (const auto others = stale_records(facts, *found); !others.empty()) {
      Json records = Json::array({to_json(*found)});
      std::string versions = found->version;
      for (const auto* other : others) {
        records.push_back(to_json(*other));
        versions += ", " + other->version;
      }
      fail(result, "stale_distribution",
           name + " has " + std::to_string(records.size()) + " records in " +
               found->metadata.parent_path().string() + " (" + versions +
               "): an upgrade left one behind, and which one a tool reads depends on directory "
               "order",
           {{"records", records}},
           "remove the stale " + name + "-*.dist-info (pip uninstall -y " + name +
               " until none is left), then pip install '" + name + specifier_text(clauses) + "'");
    } else if (!satisfies_all(found->version, clauses)) {
      fail(result, "version_mismatch",
           name + " " + found->version + " does not satisfy " + specifier_text(clauses),
           to_json(*found), "pip install '" + name + specifier_text(clauses) + "'");
    }
    if (result.status == CheckStatus::fail) {
      result.actual = actual;
      return;
    }
  }
  for (const auto& name : params.absent) {
    if (const auto* found = find_distribution(facts, name)) {
      result.actual = to_json(*found);
      fail(result, "forbidden_package",
           name + " " + found->version + " is installed; the contract forbids it", to_json(*found),
           "pip uninstall -y " + name);
      return;
    }
  }
  result.actual = actual;
  pass(result);
}

void modules(const Check&, const ModulesParams& params, const EnvFactsView& facts,
             CheckResult& result) {
  auto has = [&](const std::string& name) { return facts.files().module_files.contains(name); };
  for (const auto& name : params.present) {
    if (!has(name)) {
      if (fail_if_installed_for_another_python(result, facts, name)) {
        return;
      }
      fail(result, "missing_package", "module " + name + " is not installed",
           {{"site_packages", facts.site()}}, "install the package providing " + name);
      return;
    }
  }
  for (const auto& name : params.absent) {
    if (has(name)) {
      // Where the interpreter imports it from (any site dir), as the files say.
      const auto located_at = facts.files().module_files.find(name);
      const std::string located = located_at ? located_at->real : "";
      const std::string path = located.empty() ? facts.site() + "/" + name : located;
      fail(result, "forbidden_package", "module " + name + " is installed; the contract forbids it",
           {{"path", path}}, "pip uninstall the distribution that provides " + name);
      // What it would break: its libraries' load failures, found without loading them.
      result.notes = linkage_problems_under(facts, path);
      return;
    }
  }
  pass(result);
}

}  // namespace envcontract::contracts::judges
