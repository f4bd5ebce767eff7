#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "contracts/contract.hpp"
#include "facts/host.hpp"
#include "facts/path_pattern.hpp"
#include "facts/stage_names.hpp"

namespace envcontract::contracts {

// A judge's view of one env's facts (facts::EnvFacts, plain types written
// by probes): the lookups several judges share. No JSON is read here; facts
// reach JSON only as evidence, through facts::to_json.
class EnvFactsView {
 public:
  explicit EnvFactsView(const facts::EnvFacts& facts) : m_facts(facts) {}

  const facts::EnvFacts& facts() const { return m_facts; }
  std::string prefix() const { return m_facts.env.prefix.string(); }
  const std::string& python_version() const { return m_facts.env.python_version; }
  std::string site() const;  // the first site dir
  // Every site dir of the env in sys.path order (its own site-packages, the
  // user site, the base's when included, Debian's dist-packages).
  std::vector<std::string> sites() const;
  const facts::StaticFacts& files() const { return m_facts.static_facts; }
  // A path the agent read on the host (under a container's rootfs, or a
  // tree scanned with --root) as the env's own processes see it, which is
  // what a contract's paths name: without the system root it lies in.
  // Unchanged for an env of the host, or a path outside that root.
  std::string seen_by_env(const std::string& host_path) const;
  // The activated (or bare) environment.
  const facts::Environment& environment(facts::Activation activation) const;
  // Linkage of every library under the env's site dirs (none when the bare
  // linkage is asked for and activation does not change the library path).
  const std::vector<facts::LibraryLinkage>& libraries(
      facts::Activation activation = facts::Activation::activated) const;
  // A dynamic stage (named as facts/stage_names.hpp names them), or nullptr
  // when dynamic probes did not run it.
  const facts::StageResult* stage(
      std::string_view name, facts::Activation activation = facts::Activation::activated) const;
  // The activation artifact recorded for a stage, or nullptr.
  const facts::ActivationArtifact* activation_artifact(std::string_view stage) const;
  bool has_dynamic_facts() const { return m_facts.dynamic.has_value(); }
  // Why the environment activation gives the env's processes is not known
  // ("" when it is): its activation failed (the facts then hold the bare
  // environment as the activated one, and what was looked up under it), or
  // the agent could not run it. What is judged on it is then unknown too.
  std::string activated_environment_unknown() const;
  // The version the interpreter reported of itself ("3.10.13") when one of
  // its activated stages ran, else "".
  std::string interpreter_version() const;

  // `pattern` expanded once per site dir when it names {site} (a package
  // may live in any of them), else once: "{prefix}/lib", "${VAR}/lib" (from
  // the activated environment) made absolute.
  std::vector<std::string> expand_all(const std::string& pattern) const;
  // The same as the env's own processes name paths ({prefix} and {site}
  // inside its container or rootfs): for what they report (a search path
  // set by activation) and paths the agent read, made seen_by_env.
  // With `for_glob`, what the facts put in ({prefix}, {site}, ${VAR}) has
  // glob's special characters escaped: only the contract's wildcards match.
  std::vector<std::string> expand_all_as_env_sees(const std::string& pattern,
                                                  bool for_glob = false) const;
  // The ${VAR} names in `pattern` that the activated environment leaves unset.
  std::vector<std::string> unset_variables(const std::string& pattern) const;
  // The env's prefix, site dirs and activated variables, for path patterns.
  facts::PathAnchors anchors() const;

 private:
  const facts::EnvFacts& m_facts;
};

// The first record of `stage` of that type (and module, when given), or nullptr.
const facts::ProbeRecord* find_record(const facts::StageResult& stage, std::string_view type,
                                      std::string_view module = {});

// "None" for a missing value, else the value quoted as Python prints it.
std::string python_text(const std::optional<std::string>& value);

// The value, or JSON null.
Json optional_json(const std::optional<std::string>& value);

}  // namespace envcontract::contracts
