#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "contracts/contract.hpp"
#include "facts/path_pattern.hpp"
#include "facts/stage_names.hpp"

namespace envcontract::contracts {

// Read-only access to one env's facts JSON (docs/probes.md). Every accessor
// tolerates missing or odd fields: facts come from the env, not from us.
class EnvFactsView {
 public:
  explicit EnvFactsView(const Json& facts) : m_facts(facts) {}

  const Json& raw() const { return m_facts; }
  std::string prefix() const;
  std::string python_version() const;
  std::string site() const;  // the first site dir
  // Every site dir of the env in sys.path order (its own site-packages, the
  // user site, the base's when included, Debian's dist-packages).
  std::vector<std::string> sites() const;
  const Json& torch() const;   // static torch facts, or null
  const Json& triton() const;  // static triton facts, or null
  std::vector<std::string> modules() const;
  const Json& distributions() const;  // array
  // The activated (or bare) environment as a map of variables.
  const Json& environment(const std::string& activation) const;
  // Linkage of every library under the env's site-packages, or an empty array.
  const Json& libraries(const std::string& activation = "activated") const;
  // A dynamic stage (named as facts/stage_names.hpp names them), or nullptr
  // when dynamic probes did not run it.
  const Json* stage(std::string_view name, std::string_view activation = "activated") const;
  // The activation artifact recorded for a stage, or nullptr.
  const Json* activation_artifact(std::string_view stage) const;
  bool has_dynamic_facts() const;

  // "{prefix}/lib", "{site}/torch/lib/x.so" and "${VAR}/lib" (from the
  // activated environment) made absolute.
  // With {site}, the first site dir; see expand_all.
  std::string expand(const std::string& pattern) const;
  // `pattern` expanded once per site dir when it names {site} (a package
  // may live in any of them), else once.
  std::vector<std::string> expand_all(const std::string& pattern) const;
  // The ${VAR} names in `pattern` that the activated environment leaves unset.
  std::vector<std::string> unset_variables(const std::string& pattern) const;
  // The env's prefix, site dirs and activated variables, for path patterns.
  facts::PathAnchors anchors() const;

 private:
  const Json& m_facts;
};

// The field as a string ("" when absent, null or not a string).
std::string string_field(const Json& object, const char* key);

// The field when it is an array, else an empty array: a reference into
// `object` (nlohmann's value() returns copies, which must not be pointed into).
const Json& array_field(const Json& object, const char* key);

// The first object of `list` whose `key` is `value` (a pointer into `list`),
// or nullptr: facts entries such as library_lookups are found by name.
const Json* find_entry(const Json& list, const char* key, const std::string& value);

// The field when it is an object, else an empty object (a reference, as above).
const Json& object_field(const Json& object, const char* key);

}  // namespace envcontract::contracts
