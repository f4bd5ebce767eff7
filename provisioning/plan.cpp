#include "provisioning/plan.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/json_fields.hpp"
#include "common/python_names.hpp"
#include "contracts/check_kind.hpp"
#include "provisioning/provision_steps.hpp"

namespace envcontract::provisioning {
namespace {

using Package = contracts::KindTraits::PlanPackage;

using common::field;
using common::string_field;
using contracts::CheckStatus;
using report::CheckReport;
using report::diagnosis_of;

// A JSON value that is a string, else "": the image a target's check
// expects, say.
std::string text_of(const Json& value) {
  return value.is_string() ? value.get<std::string>() : std::string();
}

// "torch==2.10.0+cpu" -> "torch"
std::string requirement_name(const std::string& requirement) {
  return requirement.substr(0, requirement.find_first_of("=<>!~[ ;"));
}

// The package directory a file of an env belongs to: the first component
// below site-packages (or Debian's dist-packages), "" when it is elsewhere.
std::string package_of_path(const std::string& path) {
  for (const char* marker : {"/site-packages/", "/dist-packages/"}) {
    const auto at = path.rfind(marker);
    if (at != std::string::npos) {
      const auto start = at + std::char_traits<char>::length(marker);
      const auto end = path.find('/', start);
      std::string name = path.substr(start, end == std::string::npos ? end : end - start);
      for (const char* suffix : {".py", ".so"}) {
        if (name.ends_with(suffix)) {
          name.resize(name.size() - std::char_traits<char>::length(suffix));
        }
      }
      return name;
    }
  }
  return "";
}

int action_rank(StepAction action) {
  return static_cast<int>(action);
}

class EnvPlanner {
 public:
  EnvPlanner(const report::EnvReport& env, const contracts::Contract& contract)
      : m_env(env), m_recipe(contract.provision ? &*contract.provision : nullptr) {
    m_plan.env = env.name;
    m_plan.prefix = env.prefix;
    m_plan.verdict = contracts::to_string(env.verdict);
    m_python = m_plan.prefix + "/bin/python";
    m_conda = env.kind == "conda";
  }

  EnvPlan build() {
    // Files and linkage last: they are usually answered by a package step.
    std::vector<const CheckReport*> deferred;
    for (const auto& check : m_env.checks) {
      const auto& cause = diagnosis_of(check).cause;
      if (cause == "forbidden_file" || cause == "forbidden_needed") {
        deferred.push_back(&check);
      } else {
        plan_check(check);
      }
    }
    for (const auto* check : deferred) {
      plan_check(*check);
    }
    std::stable_sort(m_plan.steps.begin(), m_plan.steps.end(),
                     [](const PlanStep& a, const PlanStep& b) {
                       if (a.action != b.action) {
                         return action_rank(a.action) < action_rank(b.action);
                       }
                       // torch before what is built on it
                       return a.action == StepAction::install_distribution && a.target == "torch" &&
                              b.target != "torch";
                     });
    return m_plan;
  }

 private:
  void plan_check(const CheckReport& check) {
    if (check.status == CheckStatus::pass) {
      return;
    }
    const Finding finding(check);
    if (check.status == CheckStatus::waived) {
      // Accepted for a while by the contract: nothing to do about it now.
      m_plan.unplanned.push_back({finding.id, "waived", finding.summary});
      return;
    }
    if (plan_package_cause(check, finding) || plan_other_cause(check, finding)) {
      return;
    }
    if (const auto fix = manual_fixes().find(finding.cause); fix != manual_fixes().end()) {
      manual(finding.summary, fix->second, finding.id);
      return;
    }
    m_plan.unplanned.push_back(
        {finding.id, finding.cause,
         "no plan for this cause (docs/provisioning.md): " + finding.summary});
  }

  // What a failing check of the report says, as the planner reads it.
  struct Finding {
    explicit Finding(const CheckReport& check)
        : id(check.id),
          package(contracts::kind_traits(check.kind).plan_package),
          cause(diagnosis_of(check).cause),
          summary(diagnosis_of(check).summary),
          evidence(diagnosis_of(check).evidence),
          expected(check.expected),
          actual(check.actual) {}
    std::string id;
    // What its kind's package causes are about (the registry's trait).
    contracts::KindTraits::PlanPackage package;
    std::string cause;
    std::string summary;
    const Json& evidence;
    const Json& expected;
    const Json& actual;
  };

  // Causes no step mends: who or what does, as the plan tells it.
  static const std::map<std::string, std::string, std::less<>>& manual_fixes() {
    static const std::string devices =
        "the host's administrator: the accelerator driver loaded, its device nodes present and "
        "passed to this env (*_VISIBLE_DEVICES, the container's --device)";
    static const std::string runtime =
        "the platform team: the vendor runtime and driver versions this build of the plugin "
        "needs (the evidence shows where it ";
    static const std::string search_path =
        "the env's search path cleaned: the PYTHONPATH, .pth file or sitecustomize that brings "
        "in another copy";
    static const std::string own_code = "a look at its output: the failure is the env's own code";
    static const std::map<std::string, std::string, std::less<>> fixes = {
        {"too_few_devices", devices},
        {"missing_device_nodes", devices},
        {"ended_process", "the module or library the env loads that ends the process"},
        {"wrong_python", "the env recreated, or its packages installed for the Python it runs"},
        {"hang", runtime + "waits)"},
        {"crash", runtime + "crashed)"},
        {"glibc_too_old", "a host or image with a newer C library"},
        {"missing_tool", "the tool installed on the host or in the image"},
        {"forbidden_library", "the vendor runtime as the contract wants it on the loader's path"},
        {"forbidden_path", search_path},
        {"facts_disagree", search_path},
        {"outside_required_paths", "torch installed where the contract requires it"},
        {"stale_distribution", "the older record removed, then the distribution reinstalled"},
        {"missing_file", "what provides the file installed"},
        {"unreadable_file", "the file replaced by a regular one, or removed"},
        {"stalled_read",
         "whoever runs the filesystem that does not answer (findmnt -T PATH): mend or unmount "
         "it"},
        {"unsafe_permissions", "the env's owner: make it writable by its owner only (chmod go-w)"},
        {"imports_unchecked", "the env's owner: make it writable by its owner only (chmod go-w)"},
        {"unreadable_env",
         "the env's permissions (its user must read it), or whom it runs as (run_root_envs_as, "
         "for root's own envs)"},
        {"run_as_unavailable", "the agent's configuration: a user that exists (run_root_envs_as)"},
        {"unconfined_root",
         "the container target's exec: the runtime's own (docker, podman), or an unprivileged "
         "run_root_envs_as"},
        {"activation_failed", "the env's activation scripts, run by hand until they succeed"},
        {"smoke_failed", own_code},
        {"command_failed", own_code},
        {"integration_test_failed", own_code},
    };
    return fixes;
  }

  // A cause mended by installing or removing distributions (or, for
  // torch and Python themselves, by a new env); false for any other.
  bool plan_package_cause(const CheckReport& check, const Finding& f) {
    if (f.cause == "hip_missing" && recipe_spec("torch").empty()) {
      // Which ROCm index serves the contract's torch only a recipe says:
      // PyPI's torch has no HIP, and would fail the check again.
      manual(f.summary,
             "install the ROCm build of torch the contract names (pip install torch==VERSION "
             "--index-url https://download.pytorch.org/whl/rocmX.Y), or give the recipe's torch",
             f.id);
    } else if (f.cause == "cuda_build" || f.cause == "cuda_missing" || f.cause == "hip_build" ||
               f.cause == "hip_missing" ||
               (f.cause == "version_mismatch" && f.package == Package::torch)) {
      install("torch", default_torch_spec(f.expected), f.summary, f.id, false);
      route_fresh(
          "torch itself is replaced: every extension in the env (the vendor plugin, "
          "torch_fl) was built against the old one");
    } else if (f.cause == "version_mismatch" && f.package == Package::interpreter) {
      route_fresh("only a new env changes the Python version (" + f.summary + ")");
      m_plan.unplanned.push_back({f.id, f.cause, "a new env with the right Python (provision)"});
    } else if (f.cause == "version_mismatch") {
      const std::string name = distribution_in(check);
      if (const auto spec = recipe_spec(name); !spec.empty()) {
        install(name, spec, f.summary, f.id, false);
      } else {
        manual(f.summary, "install " + name + " at the version the contract wants", f.id);
      }
    } else if (f.cause == "missing_package") {
      const std::string name = distribution_in(check);
      const std::string spec = f.package == Package::torch ? default_torch_spec(f.expected)
                               : recipe_spec(name).empty() ? name
                                                           : recipe_spec(name);
      install(name, spec, f.summary, f.id, false);
    } else if (f.cause == "forbidden_package") {
      remove(distribution_in(check), f.summary, f.id);
    } else if (f.cause == "stock_triton") {
      const std::string provider = string_field(f.expected, "provider");
      for (const auto& found : field(f.evidence, "providers")) {
        if (found.is_string() && found.get<std::string>() != provider) {
          remove(found.get<std::string>(), f.summary, f.id);
        }
      }
      install(provider, recipe_spec(provider).empty() ? provider : recipe_spec(provider), f.summary,
              f.id, false);
    } else if (f.cause == "triton_backend_missing") {
      const std::string provider = string_field(f.evidence, "provider");
      if (const auto spec = recipe_spec(provider); !spec.empty()) {
        install(provider, spec, f.summary, f.id, true);
      } else {
        manual(f.summary, "a " + provider + " build for this platform (" + f.summary + ")", f.id);
      }
    } else if (f.cause == "import_error") {
      plan_import_error(f);
    } else {
      return false;
    }
    return true;
  }

  // A module that is not there is installed (or left to the step that
  // installs its package); any other import error is the env's to mend.
  void plan_import_error(const Finding& f) {
    const std::string error = string_field(f.evidence, "error");
    const std::string marker = "No module named '";
    const auto at = error.find(marker);
    if (at == std::string::npos) {
      manual(f.summary, "the import error above fixed in this env: " + error, f.id);
      return;
    }
    std::string module = error.substr(at + marker.size());
    module = module.substr(0, module.find_first_of("'."));
    if (!attach_to_package_step(module, f.id)) {
      install(module, recipe_spec(module).empty() ? module : recipe_spec(module), f.summary, f.id,
              false);
    }
  }

  // A cause mended by a file, a library's package, a variable, a new env or
  // a new scan, or one that waits for another; false for any other.
  bool plan_other_cause(const CheckReport& check, const Finding& f) {
    if (f.cause == "blocked") {
      m_plan.unplanned.push_back(
          {f.id, f.cause, "runs once " + string_field(f.evidence, "blocked_by") + " passes"});
    } else if (f.cause == "needs_checkout" || f.cause == "waived") {
      m_plan.unplanned.push_back({f.id, f.cause, f.summary});
    } else if (f.cause == "forbidden_file") {
      for (const auto& path : field(f.evidence, "paths")) {
        if (path.is_string()) {
          file_step(path.get<std::string>(), f.summary, f.id);
        }
      }
    } else if (f.cause == "forbidden_needed") {
      plan_forbidden_needed(f);
    } else if (f.cause == "environment_mismatch" || f.cause == "search_path_mismatch") {
      set_variable(check, f.summary, f.id);
    } else if (f.cause == "missing_library" || f.cause == "abi_signature_mismatch" ||
               f.cause == "undefined_symbol") {
      loader_failure(check, f.summary, f.id);
    } else if (f.cause == "broken_env") {
      route_fresh("the env is broken: " + f.summary);
      m_plan.unplanned.push_back({f.id, f.cause, "a new env replaces it (provision)"});
    } else if (f.cause == "facts_error" || f.cause == "judge_error" || f.cause == "probe_error" ||
               f.cause == "stopped") {
      add({StepAction::rescan,
           "",
           "",
           f.summary,
           "",
           "a scan that completes (the agent's side)",
           {f.id}});
    } else {
      return false;
    }
    return true;
  }

  // A library linked to what the contract forbids: answered by its
  // package's step, or the recipe's build of that package, else by hand.
  void plan_forbidden_needed(const Finding& f) {
    const auto& matched = field(f.actual, "matched");
    const std::string library = matched.is_array() && !matched.empty() && matched[0].is_string()
                                    ? matched[0].get<std::string>()
                                    : string_field(f.expected, "library");
    const std::string package = package_of_path(library);
    if (attach_to_package_step(package, f.id)) {
      return;
    }
    if (const auto spec = recipe_spec(package); !spec.empty()) {
      install(package, spec, f.summary, f.id, true);
    } else {
      manual(f.summary,
             "a build of " + (package.empty() ? library : package) +
                 " that does not need what the contract forbids",
             f.id);
    }
  }

  // The distribution a package check is about.
  std::string distribution_in(const CheckReport& check) const {
    const auto package = contracts::kind_traits(check.kind).plan_package;
    const auto& diagnosis = diagnosis_of(check);
    const auto& evidence = diagnosis.evidence;
    if (package == Package::torch) {
      return "torch";
    }
    if (package == Package::triton) {
      const std::string provider = string_field(check.expected, "provider");
      return provider.empty() ? "triton" : provider;
    }
    for (const char* key : {"distribution", "name"}) {
      if (const auto name = string_field(evidence, key); !name.empty()) {
        return name;
      }
    }
    if (const auto path = string_field(evidence, "path"); !path.empty()) {
      return package_of_path(path);
    }
    // "module torch_xmlir is installed; ...", "torch_fl is not installed"
    std::string summary = diagnosis.summary;
    if (summary.starts_with("module ")) {
      summary = summary.substr(7);
    }
    return summary.substr(0, summary.find(' '));
  }

  std::string recipe_spec(const std::string& distribution) const {
    if (m_recipe == nullptr || distribution.empty()) {
      return "";
    }
    const auto wanted = common::normalize_distribution_name(distribution);
    for (const auto& package : m_recipe->packages) {
      if (common::normalize_distribution_name(requirement_name(package)) == wanted) {
        return package;
      }
    }
    return "";
  }

  std::string default_torch_spec(const Json& expected) const {
    if (const auto spec = recipe_spec("torch"); !spec.empty()) {
      return spec;
    }
    const std::string base = string_field(expected, "base");
    const bool cpu = string_field(field(expected, "cuda"), "mode") == "none";
    return base.empty() ? "torch" : "torch==" + base + (cpu ? "+cpu" : "");
  }

  std::string pip_index_options() const {
    std::string options;
    if (m_recipe != nullptr) {
      if (m_recipe->no_index) {
        options += " --no-index";
      }
      if (!m_recipe->wheelhouse.empty()) {
        options += " --find-links " + shell_quoted(m_recipe->wheelhouse);
      }
      if (!m_recipe->index_url.empty()) {
        options += " --index-url " + shell_quoted(m_recipe->index_url);
      }
    }
    return options;
  }

  void route_fresh(const std::string& why) {
    if (!m_plan.fresh_env) {
      m_plan.fresh_env = true;
      m_plan.fresh_env_why = why;
    }
  }

  void add(PlanStep step) {
    for (auto& existing : m_plan.steps) {
      if (existing.action == step.action && existing.target == step.target &&
          (step.action != StepAction::manual || existing.ask == step.ask)) {
        for (auto& id : step.fixes) {
          if (std::find(existing.fixes.begin(), existing.fixes.end(), id) == existing.fixes.end()) {
            existing.fixes.push_back(id);
          }
        }
        return;
      }
    }
    m_plan.steps.push_back(std::move(step));
  }

  void install(const std::string& name, const std::string& spec, const std::string& why,
               const std::string& id, bool reinstall) {
    add({StepAction::install_distribution,
         name,
         spec,
         why,
         shell_quoted(m_python) + " -m pip install" + (reinstall ? " --force-reinstall" : "") +
             pip_index_options() + " " + shell_quoted(spec),
         "",
         {id}});
  }

  void remove(const std::string& name, const std::string& why, const std::string& id) {
    add({StepAction::remove_distribution,
         name,
         "",
         why,
         shell_quoted(m_python) + " -m pip uninstall --yes " + shell_quoted(name),
         "",
         {id}});
  }

  void manual(const std::string& why, const std::string& ask, const std::string& id) {
    add({StepAction::manual, "", "", why, "", ask, {id}});
  }

  // A step already planned for the package `package` (removing or
  // reinstalling it) also answers check `id`. False when there is none.
  bool attach_to_package_step(const std::string& package, const std::string& id) {
    if (package.empty()) {
      return false;
    }
    const auto wanted = common::normalize_distribution_name(package);
    for (auto& step : m_plan.steps) {
      if ((step.action == StepAction::remove_distribution ||
           step.action == StepAction::install_distribution) &&
          common::normalize_distribution_name(step.target) == wanted) {
        if (std::find(step.fixes.begin(), step.fixes.end(), id) == step.fixes.end()) {
          step.fixes.push_back(id);
        }
        return true;
      }
    }
    return false;
  }

  void file_step(const std::string& path, const std::string& why, const std::string& id) {
    if (!attach_to_package_step(package_of_path(path), id)) {
      add({StepAction::remove_file, path, "", why, "rm -- " + shell_quoted(path), "", {id}});
    }
  }

  void set_variable(const CheckReport& check, const std::string& why, const std::string& id) {
    const auto& expected = check.expected;
    std::string variable = string_field(diagnosis_of(check).evidence, "variable");
    if (variable.empty()) {
      variable = string_field(expected, "variable");
    }
    // "${XPU_ROOT}/lib" needs XPU_ROOT itself: when activation leaves it
    // unset, setting it is a step of its own.
    if (const auto& starts = field(expected, "starts_with"); starts.is_array()) {
      for (const auto& dir : starts) {
        const std::string text = dir.is_string() ? dir.get<std::string>() : "";
        const auto open = text.find("${");
        const auto close = open == std::string::npos ? open : text.find('}', open);
        if (close == std::string::npos) {
          continue;
        }
        const std::string needed = text.substr(open + 2, close - open - 2);
        if (why.find(needed + " is not set") != std::string::npos) {
          set_named_variable(needed, recipe_value(needed), why, id);
        }
      }
    }
    // The recipe's value first: provision writes the same.
    std::string value = recipe_value(variable);
    if (value.empty()) {
      if (const auto& starts = field(expected, "starts_with"); starts.is_array()) {
        for (const auto& dir : starts) {
          if (dir.is_string()) {
            value += (value.empty() ? "" : ":") + dir.get<std::string>();
          }
        }
        value += "${" + variable + ":+:$" + variable + "}";
      } else if (const auto equals = string_field(expected, "equals"); !equals.empty()) {
        value = equals;
      }
    }
    set_named_variable(variable, value, why, id);
  }

  std::string recipe_value(const std::string& variable) const {
    if (m_recipe != nullptr) {
      for (const auto& [name, value] : m_recipe->env_vars) {
        if (name == variable) {
          return value;
        }
      }
    }
    return "";
  }

  void set_named_variable(const std::string& variable, const std::string& value,
                          const std::string& why, const std::string& id) {
    if (value.empty() || variable.empty()) {
      manual(why,
             "the value " + (variable.empty() ? std::string("the contract wants") : variable) +
                 " must have in this env's activation (where the vendor runtime is installed)",
             id);
      return;
    }
    const std::string line = "export " + variable + "=\"" + value + "\"";
    const std::string where = m_conda ? m_plan.prefix + "/etc/conda/activate.d/envcontract.sh"
                                      : m_plan.prefix + "/bin/activate";
    add({StepAction::set_variable,
         variable,
         value,
         why,
         "add to " + where + ": " + line,
         "",
         {id}});
  }

  // A module that does not load: a library missing, a symbol missing or
  // different. The package that needs it is removed or reinstalled by
  // another step, or the recipe's build of it replaces it; else it is manual.
  void loader_failure(const CheckReport& check, const std::string& why, const std::string& id) {
    const auto& evidence = diagnosis_of(check).evidence;
    std::string needed_by = string_field(field(evidence, "missing"), "needed_by");
    for (const char* key : {"needed_by", "library", "requester"}) {
      if (needed_by.empty()) {
        needed_by = string_field(evidence, key);
      }
    }
    const std::string package = package_of_path(needed_by);
    if (attach_to_package_step(package, id)) {
      return;
    }
    if (const auto spec = recipe_spec(package); !spec.empty()) {
      install(package, spec, why, id, true);
      return;
    }
    manual(why,
           "the platform team: the library it needs (the vendor runtime), or a build of " +
               (package.empty() ? std::string("the failing module") : package) +
               " that matches this host's runtime",
           id);
  }

  const report::EnvReport& m_env;
  const contracts::ProvisionRecipe* m_recipe;
  EnvPlan m_plan;
  std::string m_python;
  bool m_conda = false;
};

Json step_json(const PlanStep& step, std::size_t order) {
  return {{"order", order},        {"action", to_string(step.action)},
          {"target", step.target}, {"value", step.value},
          {"why", step.why},       {"command", step.command},
          {"ask", step.ask},       {"fixes", step.fixes}};
}

}  // namespace

std::string to_string(StepAction action) {
  switch (action) {
    case StepAction::remove_distribution:
      return "remove_distribution";
    case StepAction::install_distribution:
      return "install_distribution";
    case StepAction::set_variable:
      return "set_variable";
    case StepAction::remove_file:
      return "remove_file";
    case StepAction::manual:
      return "manual";
    case StepAction::rescan:
      return "rescan";
  }
  return "manual";
}

HostPlan build_plan(const report::Report& report, const contracts::Contract& contract,
                    const std::string& env) {
  HostPlan plan;
  plan.host = report.host;
  plan.contract = contract.name;
  plan.recipe = contract.provision.has_value();
  // The host's image, and each container target's (`container` names it).
  const auto image_steps = [&](const std::vector<report::TargetReport>& targets,
                               const std::string& container) {
    for (const auto& target : targets) {
      for (const auto& check : target.checks) {
        // A skip (another target matched, or the images are the containers')
        // asks nothing of anyone.
        if (check.status != CheckStatus::fail && check.status != CheckStatus::error) {
          continue;
        }
        const auto& diagnosis = diagnosis_of(check);
        const bool unknown = diagnosis.cause == "image_unknown";
        const std::string whose =
            container.empty() ? "the host's" : "container " + container + "'s";
        const std::string image = text_of(check.expected);
        plan.host_steps.push_back(
            {StepAction::manual,
             target.name,
             image,
             diagnosis.summary,
             "",
             unknown ? "the agent's configuration: where " + whose +
                           " image reference is read (docs/agent.md, docs/containers.md)"
                     : "the host's administrator: run the image " + image +
                           (container.empty() ? "" : " in container " + container) +
                           " (docker pull, then recreate the container from it)",
             {(container.empty() ? "target:" : "container:" + container + ":target:") +
              target.name}});
      }
    }
  };
  image_steps(report.targets, "");
  for (const auto& container : report.containers) {
    image_steps(container.targets, container.name);
  }
  for (const auto& entry : report.envs) {
    // An entry the report could not have made: no plan (its prefix would
    // make commands for the system's interpreter).
    if (entry.prefix.empty() || entry.name.empty()) {
      continue;
    }
    if (!env.empty() && entry.name != env) {
      continue;
    }
    if (entry.verdict == contracts::EnvVerdict::compliant) {
      continue;
    }
    if (entry.container && !entry.container->empty()) {
      // Its commands would run on the host, on the container's files seen
      // from outside: a container's env is mended in the container (or its
      // image), which the plan does not reach.
      EnvPlan inside;
      inside.env = entry.name;
      inside.prefix = entry.prefix;
      inside.verdict = contracts::to_string(entry.verdict);
      inside.unplanned.push_back(
          {"", "in_container",
           "the env lives in container " + *entry.container +
               ": mend it there or in the container's image (plans run on the host)"});
      plan.envs.push_back(std::move(inside));
      continue;
    }
    plan.envs.push_back(EnvPlanner(entry, contract).build());
  }
  return plan;
}

Json to_json(const EnvPlan& plan) {
  Json steps = Json::array();
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    steps.push_back(step_json(plan.steps[i], i + 1));
  }
  Json unplanned = Json::array();
  for (const auto& item : plan.unplanned) {
    unplanned.push_back({{"check", item.check}, {"cause", item.cause}, {"why", item.why}});
  }
  return {{"env", plan.env},
          {"prefix", plan.prefix},
          {"verdict", plan.verdict},
          {"route", plan.fresh_env ? "fresh_env" : "repair"},
          {"route_why", plan.fresh_env ? plan.fresh_env_why
                                       : std::string("the steps below repair the env in place")},
          {"steps", steps},
          {"unplanned", unplanned}};
}

Json to_json(const HostPlan& plan) {
  Json host_steps = Json::array();
  for (std::size_t i = 0; i < plan.host_steps.size(); ++i) {
    host_steps.push_back(step_json(plan.host_steps[i], i + 1));
  }
  Json envs = Json::array();
  for (const auto& env : plan.envs) {
    envs.push_back(to_json(env));
  }
  return {{"schema_version", 1},   {"host", plan.host},        {"contract", plan.contract},
          {"recipe", plan.recipe}, {"host_steps", host_steps}, {"envs", envs}};
}

std::string render_plan(const HostPlan& plan) {
  std::ostringstream out;
  const auto render_step = [&out](const PlanStep& step, std::size_t order) {
    out << "  " << order << ". ";
    if (step.action == StepAction::manual) {
      out << "manual: ask " << step.ask << "\n";
    } else if (step.action == StepAction::rescan) {
      out << "scan again: " << step.ask << "\n";
    } else {
      out << to_string(step.action) << " " << step.target
          << (step.value.empty() || step.value == step.target ? "" : " (" + step.value + ")")
          << "\n     $ " << step.command << "\n";
    }
    out << "     because: " << step.why << "\n";
    std::string fixes;
    for (const auto& id : step.fixes) {
      fixes += (fixes.empty() ? "" : ", ") + id;
    }
    out << "     fixes: " << fixes << "\n";
  };
  for (std::size_t i = 0; i < plan.host_steps.size(); ++i) {
    if (i == 0) {
      out << "host " << plan.host << "\n";
    }
    render_step(plan.host_steps[i], i + 1);
  }
  for (const auto& env : plan.envs) {
    out << (out.tellp() > 0 ? "\n" : "") << env.env << " (" << env.verdict << ", " << env.prefix
        << ")\n";
    if (env.fresh_env) {
      out << "  route: a new env is the better way: " << env.fresh_env_why << "\n"
          << (plan.recipe ? "  (envcontractd provision builds one from the contract's recipe; "
                            "the steps below repair this env in place instead)\n"
                          : "  (the contract has no provision recipe: add one to let "
                            "envcontractd provision build it; the steps below repair in place)\n");
    }
    for (std::size_t i = 0; i < env.steps.size(); ++i) {
      render_step(env.steps[i], i + 1);
    }
    for (const auto& item : env.unplanned) {
      out << "  - " << item.check << ": " << item.why << "\n";
    }
  }
  if (plan.envs.empty() && plan.host_steps.empty()) {
    out << "nothing to do: every env complies\n";
  }
  return out.str();
}

const std::vector<CausePlanning>& cause_planning() {
  static const std::vector<CausePlanning> table = {
      {"cuda_build", "install_distribution", "the contract's torch build; a new env is advised"},
      {"cuda_missing", "install_distribution", "the contract's torch build; a new env is advised"},
      {"hip_build", "install_distribution", "the contract's torch build; a new env is advised"},
      {"hip_missing", "install_distribution",
       "the recipe's torch build; manual without a recipe (PyPI's torch has no HIP)"},
      {"version_mismatch", "install_distribution",
       "the recipe's specifier; torch: a new env is advised; Python: a new env only"},
      {"forbidden_path", "manual", "clean the search path (PYTHONPATH, .pth, sitecustomize)"},
      {"outside_required_paths", "manual", "install torch where the contract requires it"},
      {"stock_triton", "remove_distribution", "then install_distribution of the provider"},
      {"triton_backend_missing", "install_distribution", "the recipe's build, reinstalled"},
      {"missing_package", "install_distribution", "the recipe's specifier, or the name"},
      {"forbidden_package", "remove_distribution", ""},
      {"stale_distribution", "manual", "remove the older record, reinstall"},
      {"missing_file", "manual", "install what provides it"},
      {"forbidden_file", "remove_distribution",
       "answered by the step that removes or reinstalls its package; else remove_file"},
      {"forbidden_needed", "install_distribution",
       "answered by its package's step, or the recipe's build of it; else manual"},
      {"environment_mismatch", "set_variable", "the recipe's value, or the contract's"},
      {"search_path_mismatch", "set_variable", "the recipe's value, or the contract's"},
      {"missing_library", "install_distribution",
       "answered by the step for the package that needs it, or the recipe's build of it; "
       "else manual (the vendor runtime)"},
      {"abi_signature_mismatch", "install_distribution", "as missing_library"},
      {"undefined_symbol", "install_distribution", "as missing_library"},
      {"import_error", "install_distribution", "a missing module; other errors are manual"},
      {"smoke_failed", "manual", "the env's own code fails"},
      {"too_few_devices", "manual", "driver, device nodes, visibility"},
      {"missing_device_nodes", "manual", "driver, device nodes"},
      {"hang", "manual", "vendor runtime and driver versions"},
      {"crash", "manual", "vendor runtime and driver versions"},
      {"ended_process", "manual", "the env's code that ends the process"},
      {"wrong_python", "manual", "recreate the env, or install for the Python it runs"},
      {"activation_required", "not planned", "a note: the env works when activated"},
      {"probe_error", "rescan", "the agent could not gather the facts"},
      {"unsafe_permissions", "manual", "the env's owner makes it private"},
      {"run_as_unavailable", "manual", "the agent's configuration"},
      {"unconfined_root", "manual", "the container target's exec, or whom root's envs run as"},
      {"activation_failed", "manual", "the env's activation scripts"},
      {"imports_unchecked", "manual", "the env's owner removes what cannot be checked"},
      {"broken_env", "route", "a new env replaces it"},
      {"unreadable_env", "manual", "its permissions, or whom it runs as"},
      {"unreadable_file", "manual", "replace or remove the file"},
      {"facts_disagree", "manual", "find what brings in the other copy"},
      {"facts_error", "rescan", "the agent's side"},
      {"stalled_read", "manual", "mend or unmount the filesystem that does not answer"},
      {"stopped", "rescan", "a scan that completes"},
      {"judge_error", "rescan", "the agent's side"},
      {"blocked", "not planned", "runs once the check it waits for passes"},
      {"image_mismatch", "manual", "a host step: the image the target names"},
      {"image_partial", "not planned", "a note"},
      {"image_unknown", "manual", "a host step: configure where the image reference is read"},
      {"image_of_containers", "not planned", "the targets are judged on the host's containers"},
      {"waived", "not planned", "accepted for a while by the contract"},
      {"waiver_expired", "not planned", "a note; the check's own cause is planned"},
      {"forbidden_library", "manual", "the vendor runtime as the contract wants it"},
      {"missing_tool", "manual", "install the tool on the host or in the image"},
      {"glibc_too_old", "manual", "a host or image with a newer C library"},
      {"command_failed", "manual", "the command's own failure"},
      {"integration_test_failed", "manual", "the test's own failure"},
      {"needs_checkout", "not planned", "configure a checkout of the repository"},
  };
  return table;
}

}  // namespace envcontract::provisioning
