// Judges of what an env carries: torch's build, triton's provider, Python,
// distributions and modules.
#include <algorithm>
#include <filesystem>

#include "common/json_text.hpp"
#include "common/pep440.hpp"
#include "common/python_names.hpp"
#include "contracts/judges.hpp"

namespace envcontract::contracts::judges {
namespace {

std::string describe(const Json& value) {
  return value.is_string() ? "'" + value.get<std::string>() + "'" : "None";
}

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
const Json* find_distribution(const EnvFactsView& facts, const std::string& name) {
  const Json* conda = nullptr;
  for (const auto& distribution : facts.distributions()) {
    if (string_field(distribution, "normalized") != name) {
      continue;
    }
    if (string_field(distribution, "source") != "conda-meta") {
      return &distribution;
    }
    conda = &distribution;
  }
  return conda;
}

// Other pip records of the same distribution in the directory of `found`
// (a stale torch-2.1.2.dist-info beside torch-2.10.0.dist-info, left by an
// interrupted upgrade): which one a tool reads depends on directory order.
std::vector<const Json*> stale_records(const EnvFactsView& facts, const Json& found) {
  std::vector<const Json*> others;
  const std::string dir =
      std::filesystem::path(string_field(found, "metadata")).parent_path().string();
  for (const auto& distribution : facts.distributions()) {
    if (&distribution != &found &&
        string_field(distribution, "normalized") == string_field(found, "normalized") &&
        string_field(distribution, "source") != "conda-meta" &&
        std::filesystem::path(string_field(distribution, "metadata")).parent_path().string() ==
            dir) {
      others.push_back(&distribution);
    }
  }
  return others;
}

// torch's own view (identity stage) when dynamic probes ran, else its files.
Json torch_view(const EnvFactsView& facts) {
  const Json& files = facts.torch();
  Json view = {
      {"version", files.is_object() ? files.value("version", Json(nullptr)) : Json(nullptr)},
      {"cuda", files.is_object() ? files.value("cuda", Json(nullptr)) : Json(nullptr)},
      {"hip", files.is_object() ? files.value("hip", Json(nullptr)) : Json(nullptr)},
      {"location", files.is_object() ? files.value("location", Json("")) : Json("")},
      {"source", "files"}};
  if (const Json* identity = facts.stage(facts::stage_names::identity)) {
    for (const auto& record : array_field(*identity, "records")) {
      if (string_field(record, "type") == "torch") {
        view["version"] = record.value("version", Json(nullptr));
        view["cuda"] = record.value("cuda", Json(nullptr));
        view["hip"] = record.value("hip", Json(nullptr));
        view["source"] = "import torch";
      }
    }
  }
  return view;
}

// The toolkit rule ("cuda"/"hip": none, required, any, exact) against a value.
std::optional<std::pair<std::string, std::string>> toolkit_problem(const ToolkitRule& rule,
                                                                   const Json& actual,
                                                                   const std::string& name,
                                                                   const std::string& version) {
  using Mode = ToolkitRule::Mode;
  if (rule.mode == Mode::none && actual.is_string()) {
    return std::pair{name == "cuda" ? "cuda_build" : "version_mismatch",
                     (name == "cuda" ? "CUDA" : "HIP") + std::string(" build of torch (") +
                         version + ", torch.version." + name + " == " + describe(actual) +
                         ") where the contract requires a CPU build"};
  }
  if ((rule.mode == Mode::required || rule.mode == Mode::exact) && !actual.is_string()) {
    return std::pair{"cuda_missing", "torch.version." + name + " is None: a CPU build of torch " +
                                         version + " where the contract needs " + name};
  }
  if (rule.mode == Mode::exact && actual.is_string() && actual.get<std::string>() != rule.version) {
    return std::pair{"version_mismatch", "torch.version." + name + " is " + describe(actual) +
                                             ", the contract wants '" + rule.version + "'"};
  }
  return std::nullopt;
}

}  // namespace

void torch(const Check&, const TorchParams& params, const EnvFactsView& facts,
           CheckResult& result) {
  if (!facts.torch().is_object()) {
    fail(result, "missing_package", "torch is not installed in " + facts.prefix(), Json::object(),
         "install torch as the contract requires, or exclude this env");
    return;
  }
  Json view = torch_view(facts);
  // Judged after importing vendor modules: their record of torch's view.
  if (!params.after_import.empty()) {
    const Json* imports = facts.stage(facts::stage_names::imports);
    bool found = false;
    for (const auto& record : imports ? array_field(*imports, "records") : Json::array()) {
      if (string_field(record, "type") == "torch_after_imports") {
        view["cuda"] = record.value("cuda", Json(nullptr));
        view["hip"] = record.value("hip", Json(nullptr));
        view["source"] = "after importing " + common::json_text(Json(params.after_import));
        found = true;
      }
    }
    if (!found) {
      result.status = CheckStatus::skip;
      result.actual = view;
      result.diagnosis = Diagnosis{"probe_error",
                                   "torch's view after importing the vendor modules is unknown: "
                                   "the imports stage did not get that far",
                                   Json::object(), "see the imports check"};
      return;
    }
  }
  result.actual = view;
  const std::string version = view["version"].is_string() ? view["version"].get<std::string>() : "";
  const auto plus = version.find('+');
  const std::string base = version.substr(0, plus);
  const std::string local = plus == std::string::npos ? "" : version.substr(plus + 1);
  const Json evidence = {{"version", view["version"]},
                         {"cuda", view["cuda"]},
                         {"hip", view["hip"]},
                         {"location", view["location"]},
                         {"libraries", facts.torch().value("libraries", Json::array())}};
  const std::string cpu_base = params.base.empty() ? base : params.base;
  const std::string cpu_remedy = "install the CPU build of torch " + cpu_base +
                                 " in this env (pip install torch==" + cpu_base +
                                 " --index-url https://download.pytorch.org/whl/cpu)";
  if (params.cuda) {
    if (auto problem = toolkit_problem(*params.cuda, view["cuda"], "cuda", version)) {
      fail(result, problem->first, problem->second, evidence,
           problem->first == "cuda_build" ? cpu_remedy
                                          : "install the torch build the contract names");
      return;
    }
  }
  if (params.hip) {
    if (auto problem = toolkit_problem(*params.hip, view["hip"], "hip", version)) {
      fail(result, problem->first, problem->second, evidence,
           "install the torch build the contract names");
      return;
    }
  }
  const std::string& wanted_version = params.version;
  const std::string& wanted_base = params.base;
  const std::string& wanted_local = params.local;
  if ((!wanted_version.empty() && version != wanted_version) ||
      (!wanted_base.empty() && base != wanted_base) ||
      (!wanted_local.empty() && local != wanted_local)) {
    const std::string wanted = !wanted_version.empty()
                                   ? wanted_version
                                   : wanted_base + (wanted_local.empty() ? "" : "+" + wanted_local);
    const bool cuda_local = wanted_local == "cpu" && local.starts_with("cu");
    fail(result, cuda_local ? "cuda_build" : "version_mismatch",
         "torch " + version + ", the contract wants " + wanted, evidence,
         cuda_local ? cpu_remedy : "install torch " + wanted + " in this env");
    return;
  }
  const std::string location = string_field(view, "location");
  for (const auto& forbidden : params.forbidden_paths) {
    if (location.starts_with(forbidden)) {
      fail(result, "forbidden_path",
           "torch resolves from " + location + ", under the forbidden " + forbidden, evidence,
           "install torch into this env itself; do not use the image's own torch");
      return;
    }
  }
  const std::string file = location + "/__init__.py";  // torch.__file__
  for (const auto& part : params.forbidden_path_parts) {
    if (file.find(part) != std::string::npos) {
      fail(result, "forbidden_path",
           "torch resolves from " + file + ", which contains the forbidden '" + part + "'",
           evidence, "install the torch build the contract names into this env itself");
      return;
    }
  }
  const auto& required = params.required_paths;
  if (!required.empty() &&
      std::none_of(required.begin(), required.end(),
                   [&](const std::string& prefix) { return location.starts_with(prefix); })) {
    fail(result, "forbidden_path",
         "torch resolves from " + location + ", outside " + common::json_text(Json(required)),
         evidence, "install torch where the contract requires it");
    return;
  }
  pass(result);
}

void triton(const Check&, const TritonParams& params, const EnvFactsView& facts,
            CheckResult& result) {
  const Json& triton = facts.triton();
  const std::string& wanted = params.provider;
  if (!triton.is_object()) {
    fail(result, "missing_package", "triton is not installed in " + facts.prefix(), Json::object(),
         wanted.empty() ? "install triton" : "install " + wanted + ", which provides triton");
    return;
  }
  result.actual = triton;
  const std::string provider = string_field(triton, "provider");
  const std::string provider_version = string_field(triton, "provider_version");
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
    for (const auto& claimant : array_field(triton, "providers")) {
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
  const std::string version = string_field(triton, "version");
  if (!prefix.empty() && !version.starts_with(prefix)) {
    fail(result, "version_mismatch",
         "triton.__version__ is " + (version.empty() ? std::string("unknown") : version) +
             ", the contract wants " + prefix + "*",
         triton, "install the triton build the contract names");
    return;
  }
  std::vector<std::string> missing;
  for (const auto& backend : params.backends) {
    const auto& present = array_field(triton, "backends");
    if (std::find(present.begin(), present.end(), backend) == present.end()) {
      missing.push_back(backend);
    }
  }
  if (!missing.empty()) {
    fail(result, "triton_backend_missing",
         "triton (" + provider + " " + provider_version + ") has backends " +
             common::json_text(array_field(triton, "backends")) + "; the contract needs " +
             common::json_text(Json(missing)),
         triton,
         "install the " + (wanted.empty() ? provider : wanted) + " build for this platform");
    return;
  }
  pass(result);
}

void python(const Check&, const PythonParams& params, const EnvFactsView& facts,
            CheckResult& result) {
  const std::string version = facts.python_version();
  result.actual = version;
  if (!satisfies_all(version, params.version)) {
    fail(result, "version_mismatch",
         "Python " + version + ", the contract wants " + specifier_text(params.version),
         {{"python_version", version}}, "recreate the env with the Python the contract names");
    return;
  }
  pass(result);
}

void distributions(const Check&, const DistributionsParams& params, const EnvFactsView& facts,
                   CheckResult& result) {
  Json actual = Json::object();
  for (const auto& [name, clauses] : params.pins) {
    const Json* found = find_distribution(facts, name);
    actual[name] = found ? Json(string_field(*found, "version")) : Json(nullptr);
    if (!found) {
      fail(result, "missing_package",
           name + " is not installed; the contract pins " + specifier_text(clauses), Json::object(),
           "pip install '" + name + specifier_text(clauses) + "'");
    } else if (const auto others = stale_records(facts, *found); !others.empty()) {
      Json records = Json::array({*found});
      std::string versions = string_field(*found, "version");
      for (const Json* other : others) {
        records.push_back(*other);
        versions += ", " + string_field(*other, "version");
      }
      fail(result, "stale_distribution",
           name + " has " + std::to_string(records.size()) + " records in " +
               std::filesystem::path(string_field(*found, "metadata")).parent_path().string() +
               " (" + versions +
               "): an upgrade left one behind, and which one a tool reads depends on directory "
               "order",
           {{"records", records}},
           "remove the stale " + name + "-*.dist-info (pip uninstall -y " + name +
               " until none is left), then pip install '" + name + specifier_text(clauses) + "'");
    } else if (!satisfies_all(string_field(*found, "version"), clauses)) {
      fail(result, "version_mismatch",
           name + " " + string_field(*found, "version") + " does not satisfy " +
               specifier_text(clauses),
           *found, "pip install '" + name + specifier_text(clauses) + "'");
    }
    if (result.status == CheckStatus::fail) {
      result.actual = actual;
      return;
    }
  }
  for (const auto& name : params.absent) {
    if (const Json* found = find_distribution(facts, name)) {
      result.actual = *found;
      fail(result, "forbidden_package",
           name + " " + string_field(*found, "version") + " is installed; the contract forbids it",
           *found, "pip uninstall -y " + name);
      return;
    }
  }
  result.actual = actual;
  pass(result);
}

void modules(const Check&, const ModulesParams& params, const EnvFactsView& facts,
             CheckResult& result) {
  const auto present = facts.modules();
  auto has = [&](const std::string& name) {
    return std::find(present.begin(), present.end(), name) != present.end();
  };
  for (const auto& name : params.present) {
    if (!has(name)) {
      fail(result, "missing_package", "module " + name + " is not installed",
           {{"site_packages", facts.site()}}, "install the package providing " + name);
      return;
    }
  }
  for (const auto& name : params.absent) {
    if (has(name)) {
      // Where the interpreter imports it from (any site dir), as the files say.
      const std::string located = string_field(
          object_field(object_field(facts.raw(), "static"), "module_paths"), name.c_str());
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
