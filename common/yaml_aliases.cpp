#include "common/yaml_aliases.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

namespace envcontract::common {
namespace {

// Follows the parser's events (the ones YAML::Load builds its tree from),
// keeping for every anchored node how many nodes and levels it stands for
// once its own aliases are expanded. An alias then costs what its anchor
// stands for, known without expanding anything: the count is exact and the
// work linear, whatever the document expands to.
class AliasMeter final : public YAML::EventHandler {
 public:
  const std::optional<YamlAliasProblem>& problem() const { return m_problem; }

  void OnDocumentStart(const YAML::Mark& /*mark*/) override {}
  void OnDocumentEnd() override {}

  void OnAnchor(const YAML::Mark& /*mark*/, const std::string& name) override {
    m_next_anchor_name = name;
  }

  void OnNull(const YAML::Mark& /*mark*/, YAML::anchor_t anchor) override { leaf(anchor); }

  void OnScalar(const YAML::Mark& /*mark*/, const std::string& /*tag*/, YAML::anchor_t anchor,
                const std::string& /*value*/) override {
    leaf(anchor);
  }

  void OnSequenceStart(const YAML::Mark& /*mark*/, const std::string& /*tag*/,
                       YAML::anchor_t anchor, YAML::EmitterStyle::value /*style*/) override {
    open(anchor);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& /*mark*/, const std::string& /*tag*/, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value /*style*/) override {
    open(anchor);
  }
  void OnMapEnd() override { close(); }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (m_problem) {
      return;
    }
    if (m_open_anchors.contains(anchor)) {
      report(mark, "the alias" + alias_name(anchor) +
                       " is inside the node it names (an alias cycle), which no reading of the "
                       "document ends; write the value out instead of the alias");
      return;
    }
    const auto found = m_anchored.find(anchor);
    if (found == m_anchored.end()) {
      return;  // the parser itself refuses an alias of no anchor
    }
    const Extent& extent = found->second;
    const std::size_t reached = depth() + extent.levels - 1;
    m_expanded += extent.nodes;
    reach(reached);
    if (m_expanded - m_written > k_max_nodes_through_aliases) {
      report(mark, "the alias" + alias_name(anchor) + " expands the YAML beyond " +
                       std::to_string(k_max_nodes_through_aliases) +
                       " nodes (a billion-laughs document: aliases of lists of aliases); write "
                       "the values out, or alias fewer and smaller nodes");
    } else if (reached > k_max_depth_through_aliases) {
      report(mark, "the alias" + alias_name(anchor) + " nests the YAML deeper than " +
                       std::to_string(k_max_depth_through_aliases) +
                       " levels (aliases of nodes that hold aliases); write the values out, or "
                       "nest fewer aliases");
    }
  }

 private:
  // What an anchored node stands for, its aliases expanded.
  struct Extent {
    std::size_t nodes = 1;
    std::size_t levels = 1;  // 1 for a scalar
  };
  // A list or mapping whose end has not come yet.
  struct Open {
    YAML::anchor_t anchor = YAML::NullAnchor;
    std::size_t expanded_before = 0;  // m_expanded before the node itself
    std::size_t level = 0;            // the node's own depth, from 1
    std::size_t deepest = 0;          // the deepest level reached inside it so far
  };

  std::size_t depth() const { return m_open.size() + 1; }

  void reach(std::size_t level) {
    if (!m_open.empty()) {
      m_open.back().deepest = std::max(m_open.back().deepest, level);
    }
  }

  // Every node written out, before what it holds.
  void count(YAML::anchor_t anchor) {
    ++m_written;
    ++m_expanded;
    reach(depth());
    if (anchor != YAML::NullAnchor) {
      m_names[anchor] = m_next_anchor_name;
    }
  }

  void leaf(YAML::anchor_t anchor) {
    count(anchor);
    if (anchor != YAML::NullAnchor) {
      m_anchored[anchor] = Extent{};
    }
  }

  void open(YAML::anchor_t anchor) {
    count(anchor);
    m_open.push_back({anchor, m_expanded - 1, depth(), depth()});
    if (anchor != YAML::NullAnchor) {
      m_open_anchors.insert(anchor);
    }
  }

  void close() {
    if (m_open.empty()) {
      return;
    }
    const Open node = m_open.back();
    m_open.pop_back();
    reach(node.deepest);
    if (node.anchor != YAML::NullAnchor) {
      m_open_anchors.erase(node.anchor);
      m_anchored[node.anchor] =
          Extent{m_expanded - node.expanded_before, node.deepest - node.level + 1};
    }
  }

  // " *name", or "" for an anchor the parser did not name.
  std::string alias_name(YAML::anchor_t anchor) const {
    const auto found = m_names.find(anchor);
    return found == m_names.end() || found->second.empty() ? "" : " *" + found->second;
  }

  void report(const YAML::Mark& mark, std::string message) {
    m_problem = YamlAliasProblem{mark.line + 1, mark.column + 1, std::move(message)};
  }

  std::vector<Open> m_open;  // outermost first
  std::set<YAML::anchor_t> m_open_anchors;
  std::map<YAML::anchor_t, Extent> m_anchored;  // anchored nodes already ended
  std::map<YAML::anchor_t, std::string> m_names;
  std::string m_next_anchor_name;
  std::size_t m_written = 0;   // nodes written out so far
  std::size_t m_expanded = 0;  // nodes a walk would have visited so far
  std::optional<YamlAliasProblem> m_problem;
};

// Where a document's first node with content is (a scalar, a list, a
// mapping, an alias); an empty document ("---" alone) has none.
class ContentSeen final : public YAML::EventHandler {
 public:
  const std::optional<YAML::Mark>& first() const { return m_first; }

  void OnDocumentStart(const YAML::Mark& /*mark*/) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& /*mark*/, YAML::anchor_t /*anchor*/) override {}
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t /*anchor*/) override { seen(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t /*anchor*/,
                const std::string& /*value*/) override {
    seen(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/,
                       YAML::anchor_t /*anchor*/, YAML::EmitterStyle::value /*style*/) override {
    seen(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t /*anchor*/,
                  YAML::EmitterStyle::value /*style*/) override {
    seen(mark);
  }
  void OnMapEnd() override {}

 private:
  void seen(const YAML::Mark& mark) {
    if (!m_first) {
      m_first = mark;
    }
  }
  std::optional<YAML::Mark> m_first;
};

}  // namespace

std::optional<YamlSecondDocument> find_second_yaml_document(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  ContentSeen first;
  try {
    if (!parser.HandleNextDocument(first)) {
      return std::nullopt;
    }
  } catch (const YAML::Exception&) {
    return std::nullopt;  // the load reports it
  }
  ContentSeen second;
  try {
    if (!parser.HandleNextDocument(second) || !second.first()) {
      return std::nullopt;
    }
  } catch (const YAML::Exception& e) {
    return YamlSecondDocument{e.mark.line + 1, e.mark.column + 1, e.msg};
  }
  return YamlSecondDocument{second.first()->line + 1, second.first()->column + 1, ""};
}

std::optional<YamlAliasProblem> find_yaml_alias_problem(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  AliasMeter meter;
  try {
    parser.HandleNextDocument(meter);
  } catch (const YAML::Exception&) {
    return std::nullopt;  // not YAML: the load says why, with its own position
  }
  return meter.problem();
}

}  // namespace envcontract::common
