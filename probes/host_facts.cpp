#include "probes/host_facts.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <set>

#include "common/time_text.hpp"
#include "probes/import_safety.hpp"

namespace envcontract::probes {

namespace {

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) {
    return "localhost";
  }
  return name;
}

// The files of one env that are reported refused, at most: an env of 100,000
// FIFOs is told by its first ones and a count, not a report of 100,000 lines.
constexpr std::size_t k_reported_refusals = 50;

// Runs one step of gathering an env's facts: what it throws becomes an
// error of that env, and the files it refused become that env's problems.
// A cancelled scan (watchdog, shutdown) runs no more steps.
template <typename Step>
void contained(EnvFacts& env, const char* stage, const Cancellation* cancellation, Step&& step) {
  if (cancellation != nullptr && cancellation->cancelled()) {
    env.errors.push_back({stage, "not gathered: " + cancellation->reason()});
    return;
  }
  FileProblemLog refused;
  try {
    step();
  } catch (const std::exception& e) {
    env.errors.push_back({stage, e.what()});
  } catch (...) {
    env.errors.push_back({stage, "an unknown exception"});
  }
  std::set<std::filesystem::path> known;
  for (const auto& problem : env.refused_files) {
    known.insert(problem.path);
  }
  for (auto& problem : refused.take()) {
    if (!known.insert(problem.path).second) {
      continue;
    }
    if (env.refused_files.size() < k_reported_refusals) {
      env.refused_files.push_back(std::move(problem));
    } else {
      ++env.more_refused_files;
    }
  }
}

// Whether the user the env's code runs as can read its prefix (called while
// reading as that user). When it cannot, nothing of the env is visible to
// its own interpreter either: the env is broken as an env, and says so,
// rather than "torch is not installed".
bool readable_prefix(PythonEnv& env) {
  // Python needs to pass through the prefix (x), not to list it (r): a 0711
  // prefix works. Reaching bin/ inside it takes exactly that permission.
  const int fd = ::open((env.prefix / "bin").c_str(), O_PATH | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return true;
  }
  if (errno != EACCES && errno != EPERM) {
    return true;  // gone since discovery, or another trouble the readers report
  }
  env.problems.push_back(env.prefix.string() + " cannot be read by " + env.run_as.user +
                         ", the user its code runs as (permission denied)");
  return false;
}

}  // namespace

HostFacts gather_host_facts(const HostFactsOptions& options, ActivationCache& activations,
                            ElfCache& elf_files) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  HostFacts facts;
  facts.host = hostname();
  facts.gathered_at = common::now_rfc3339();
  facts.image = read_image_tag(options.image);
  auto discovery = discover_envs(options.discovery);
  facts.problems = std::move(discovery.problems);
  for (auto& env : discovery.envs) {
    EnvFacts env_facts;
    env_facts.refused_files = env.refused_files;
    env_facts.env = std::move(env);
    facts.envs.push_back(std::move(env_facts));
  }
  // Activation first: what it sets (PYTHONPATH, PYTHONUSERBASE) moves the
  // search path the static facts follow.
  for (auto& env : facts.envs) {
    contained(env, "activation", options.cancellation,
              [&] { env.activation = activations.get(env.env, options.cancellation); });
  }
  const auto activated_done = Clock::now();
  for (auto& env : facts.envs) {
    contained(env, "static facts", options.cancellation, [&] {
      // Read as the user the env's code runs as: whatever that user could
      // not read (a link to /etc/shadow, another user's private file) stays
      // out of the facts, as it would stay out of their interpreter.
      ReadingAs reading(env.env.run_as);
      if (reading.ok() && !readable_prefix(env.env)) {
        return;
      }
      if (reading.ok()) {
        const auto& environment =
            env.activation.activated.empty() ? bare_environment(env.env) : env.activation.activated;
        env.static_facts = gather_static_facts(env.env, environment);
        refuse_unsafe_imports(env.env, env.static_facts.search_path);
      }
    });
    if (!env.env.imports_checked) {
      // The static facts did not get that far: checked on its own, failing
      // closed, so the facts say why the env's code will not run.
      contained(env, "import check", options.cancellation,
                [&] { refuse_unsafe_imports(env.env, env.activation); });
    }
  }
  const auto static_done = Clock::now();
  const auto ld_cache = std::make_shared<const LdCache>(LdCache::load());
  // Device nodes are the host's: globbed once, as the agent.
  const auto device_nodes = glob_device_nodes(options.request.device_globs);
  for (auto& env : facts.envs) {
    contained(env, "linkage", options.cancellation, [&] {
      ReadingAs reading(env.env.run_as);
      if (!reading.ok()) {
        return;
      }
      const auto& sites = env.static_facts.site_packages;
      // Copies of packages that an earlier path entry hides are never loaded.
      std::vector<std::filesystem::path> hidden;
      for (const auto& module : env.static_facts.shadowed) {
        hidden.push_back(module.path);
      }
      env.linkage = gather_linkage_facts(env.env, sites, env.activation.activated,
                                         Activation::activated, ld_cache, elf_files, hidden);
      const auto path_of = [](const Environment& environment) {
        const auto it = environment.find("LD_LIBRARY_PATH");
        return it == environment.end() ? std::string() : it->second;
      };
      env.library_lookups = lookup_libraries(env.env, env.activation.activated,
                                             options.request.library_names, ld_cache, elf_files);

      env.glibc = glibc_facts(env.env, env.activation.activated, ld_cache, elf_files);
      if (path_of(env.activation.bare) != path_of(env.activation.activated)) {
        env.bare_linkage = gather_linkage_facts(env.env, sites, env.activation.bare,
                                                Activation::bare, ld_cache, elf_files, hidden);
      }
    });
  }
  // What the contract's checks asked for, each env in a step of its own:
  // a failure there leaves the linkage facts (and the other envs) alone.
  for (auto& env : facts.envs) {
    env.device_nodes = device_nodes;
    contained(env, "requested facts", options.cancellation, [&] {
      ReadingAs reading(env.env.run_as);
      if (!reading.ok()) {
        return;
      }
      facts::PathAnchors anchors;
      anchors.prefix = env.env.prefix.string();
      for (const auto& site : env.static_facts.site_packages) {
        anchors.sites.push_back(site.string());
      }
      anchors.variables = env.activation.activated;
      std::vector<std::string> hidden;
      for (const auto& module : env.static_facts.shadowed) {
        hidden.push_back(module.path.string());
      }
      env.path_matches = match_path_patterns(options.request.path_patterns, anchors, hidden);
      const auto path = env.activation.activated.find("PATH");
      env.tools =
          find_tools(options.request.tools,
                     path == env.activation.activated.end() ? "" : path->second, env.env.run_as);
    });
  }
  facts.activation_elapsed =
      std::chrono::duration_cast<std::chrono::microseconds>(activated_done - start);
  facts.static_elapsed =
      std::chrono::duration_cast<std::chrono::microseconds>(static_done - activated_done);
  facts.linkage_elapsed =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - static_done);
  return facts;
}

Json to_json(const FactError& error) {
  return {{"stage", error.stage}, {"message", error.message}};
}

Json to_json(const FileProblem& problem) {
  return {{"path", problem.path.string()}, {"problem", problem.problem}};
}

Json to_json(const HostFacts& facts) {
  auto envs = Json::array();
  for (const auto& env : facts.envs) {
    Json json = to_json(env.env);
    json["static"] = to_json(env.static_facts);
    json["activation"] = to_json(env.activation);
    json["linkage"] = {{"activated", to_json(env.linkage)},
                       {"bare", env.bare_linkage ? to_json(*env.bare_linkage) : Json(nullptr)}};
    auto lookups = Json::array();
    for (const auto& lookup : env.library_lookups) {
      lookups.push_back(to_json(lookup));
    }
    json["library_lookups"] = std::move(lookups);
    const auto all = [](const auto& items) {
      auto array = Json::array();
      for (const auto& item : items) {
        array.push_back(to_json(item));
      }
      return array;
    };
    json["path_matches"] = all(env.path_matches);
    json["tool_lookups"] = all(env.tools);
    json["device_nodes"] = all(env.device_nodes);
    json["glibc"] = to_json(env.glibc);
    auto refused = Json::array();
    for (const auto& problem : env.refused_files) {
      refused.push_back(to_json(problem));
    }
    if (env.more_refused_files > 0) {
      refused.push_back({{"path", "..."},
                         {"problem", std::to_string(env.more_refused_files) +
                                         " more files refused, not listed"}});
    }
    json["refused_files"] = std::move(refused);
    auto errors = Json::array();
    for (const auto& error : env.errors) {
      errors.push_back(to_json(error));
    }
    json["fact_errors"] = std::move(errors);
    envs.push_back(std::move(json));
  }
  auto problems = Json::array();
  for (const auto& problem : facts.problems) {
    problems.push_back({{"path", problem.path.string()}, {"problem", problem.problem}});
  }
  return {{"schema_version", 1},
          {"host", facts.host},
          {"gathered_at", facts.gathered_at},
          {"timing_ms",
           {{"static", static_cast<double>(facts.static_elapsed.count()) / 1000.0},
            {"activation", static_cast<double>(facts.activation_elapsed.count()) / 1000.0},
            {"linkage", static_cast<double>(facts.linkage_elapsed.count()) / 1000.0}}},
          {"image", to_json(facts.image)},
          {"problems", problems},
          {"envs", envs}};
}

}  // namespace envcontract::probes
