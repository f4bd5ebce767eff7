#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "contracts/check_params.hpp"
#include "contracts/contract.hpp"
#include "contracts/mapping_reader.hpp"
#include "contracts/values.hpp"

// Shared readers for check-kind parsers: each reads one key of a check into
// its typed parameter (check_params.hpp), reporting bad values at their own
// position and leaving the parameter as it was.
namespace envcontract::contracts::kind_helpers {

using NamePredicate = bool (*)(std::string_view);

// A list of names (a single name counts as a list of one), each validated;
// `what_a_name_is` completes "must be ...". The valid ones go to `names`.
// Returns false on any error.
bool read_names(MappingReader& reader, std::string_view key, Strings& names, NamePredicate is_valid,
                std::string_view what_a_name_is, Need need = Need::optional);

// A string, as is.
void read_text(MappingReader& reader, std::string_view key, std::string& text, Need need);

// The check's `timeout` ("30s", "5m"); `timeout` keeps its default when absent.
void read_timeout(MappingReader& reader, std::chrono::milliseconds& timeout);

// A count comparison ("> 0", ">= 8", "8"); `count` keeps its default when absent.
void read_count(MappingReader& reader, std::string_view key, Comparison& count, Need need);

// A PEP 440 specifier, as [{op, version}].
void read_specifier(MappingReader& reader, std::string_view key,
                    std::vector<VersionClause>& clauses, Need need, BareVersion bare);

// A pattern for what env code prints (RE2 syntax: contracts/output_pattern.hpp),
// checked to compile; a pattern RE2 refuses is reported with what to write
// instead and leaves `pattern` as it was.
void read_output_pattern(MappingReader& reader, std::string_view key, std::string& pattern);

// Path patterns anchored at "{prefix}" (the env), "{site}" (its site-packages)
// or "/" (absolute); globs allowed.
bool read_path_patterns(MappingReader& reader, std::string_view key, Strings& patterns);
// One such path pattern.
void read_path_pattern(MappingReader& reader, std::string_view key, std::string& pattern,
                       Need need);

// One entry of a name-to-string mapping, with its nodes for messages.
struct NamedValue {
  std::string name;
  std::string value;
  YAML::Node name_node;
  YAML::Node value_node;
};

// The entries of the mapping at `key` whose names pass `is_valid_name` and
// whose values are strings; the others are reported. `what_it_maps` completes
// "must map ...", e.g. "variable names to values".
std::vector<NamedValue> read_named_values(MappingReader& reader, std::string_view key,
                                          NamePredicate is_valid_name,
                                          std::string_view what_a_name_is,
                                          std::string_view what_it_maps);

// Reports an error at the mapping when none of `keys` is present: a check
// that checks nothing is a mistake, not a pass.
void require_one_of(MappingReader& reader, std::initializer_list<std::string_view> keys);

}  // namespace envcontract::contracts::kind_helpers
