#pragma once

#include <cstddef>
#include <optional>
#include <string>

// A bound on what YAML aliases make of a document, for every loader of YAML
// written by someone else (contracts, the agent's config, a user's .condarc).
//
// yaml-cpp resolves an alias to the very node its anchor names, so the tree
// it loads is a graph: `&a [*a]` is a list that holds itself, and nine lines
// of "billion laughs" (each anchor a list of ten aliases of the one before)
// stand for 10^9 nodes. Loading either is quick; any walk of the tree (ours
// recurse) then overflows the stack or never ends. The text is checked
// instead, once, before its tree is walked.
namespace envcontract::common {

// Nodes a walk of a document may visit because of its aliases (over those
// written out): far more than any contract or config holds, while a walk of
// them stays in the milliseconds.
constexpr std::size_t k_max_nodes_through_aliases = 100'000;

// How deep aliases may take a document. yaml-cpp refuses text nested about
// this deep (its DepthGuard), so a walk that manages the text it accepts
// manages this too; aliases of aliases could go deeper without the bound.
constexpr std::size_t k_max_depth_through_aliases = 500;

struct YamlAliasProblem {
  int line = 0;  // of the alias, from 1
  int column = 0;
  std::string message;  // what is wrong and what to write instead, without the position
};

// Reads the first document of `text` as YAML::Load does and returns the first
// alias that makes it unsafe to walk: one inside the node it names (a cycle)
// or one past which the document holds more than
// k_max_nodes_through_aliases nodes reached through aliases, or nodes deeper
// than k_max_depth_through_aliases. nullopt when no alias does, and when the
// text is not YAML at all: the load reports that in its own words. Linear in
// the length of the text; reads nothing else.
std::optional<YamlAliasProblem> find_yaml_alias_problem(const std::string& text);

struct YamlSecondDocument {
  int line = 0;  // where it starts (its first node), from 1
  int column = 0;
  std::string syntax_error;  // when what follows the first document is not YAML, "" otherwise
};

// Whether `text` holds a second document with content after its first (a
// second "---" followed by nodes), or text after the first that is not
// YAML. Reads the events of at most one document past the first (yaml-cpp
// 0.7's LoadAll loops for ever on some inputs, such as ","). nullopt when
// there is none, or only empty ones, and when the first is not YAML (the
// load says why).
std::optional<YamlSecondDocument> find_second_yaml_document(const std::string& text);

}  // namespace envcontract::common
