#include "contracts/yaml_document.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <yaml-cpp/depthguard.h>

#include "common/yaml_aliases.hpp"

namespace envcontract::contracts {
namespace {

// yaml-cpp keeps every pair of a mapping, duplicates included, so a walk over
// the tree finds them; `node[key]` would silently return the first one. A
// mapping reached again through an alias is the same text: each duplicate
// is reported once (`reported`: the positions already said).
void report_duplicate_keys(const YAML::Node& node, ParseContext& ctx,
                           std::set<std::pair<int, int>>& reported) {
  if (node.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (const auto& pair : node) {
      if (pair.first.IsScalar()) {
        const auto& key = pair.first.Scalar();
        const auto [it, inserted] = seen.emplace(key, pair.first.Mark());
        const auto& mark = pair.first.Mark();
        if (!inserted && reported.emplace(mark.line, mark.column).second) {
          ctx.error(pair.first, "duplicate key '" + key + "' (first defined at line " +
                                    std::to_string(it->second.line + 1) + ")");
        }
      }
      report_duplicate_keys(pair.second, ctx, reported);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      report_duplicate_keys(item, ctx, reported);
    }
  }
}

// Where `text` holds a NUL byte, as 0-based line and column; nullopt when it
// holds none, or is UTF-16 or UTF-32 (marked so by its byte order mark, and
// full of NULs by nature).
std::optional<YAML::Mark> nul_byte(const std::string& text) {
  const auto at = text.find('\0');
  if (at == std::string::npos || text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF") ||
      text.starts_with(std::string_view("\0\0\xFE\xFF", 4))) {
    return std::nullopt;
  }
  YAML::Mark mark;
  mark.pos = static_cast<int>(at);
  const auto line_start = text.rfind('\n', at);
  mark.line =
      static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
  mark.column = static_cast<int>(line_start == std::string::npos ? at : at - line_start - 1);
  return mark;
}

bool is_plain(const YAML::Node& node) {
  return node.Tag() == "?";
}

}  // namespace

SourceLocation ParseContext::locate(const YAML::Mark& mark) const {
  const YAML::Mark& known = mark.is_null() ? m_fallback : mark;
  if (known.is_null()) {
    return {m_file, 0, 0};
  }
  return {m_file, known.line + 1, known.column + 1};
}

SourceLocation ParseContext::locate(const YAML::Node& node) const {
  return locate(node.Mark());
}

void ParseContext::error(const YAML::Node& node, std::string message) {
  m_diagnostics.error(locate(node), std::move(message));
}

void ParseContext::warning(const YAML::Node& node, std::string message) {
  m_diagnostics.warning(locate(node), std::move(message));
}

void ParseContext::note(const YAML::Node& node, std::string message) {
  m_diagnostics.note(locate(node), std::move(message));
}

namespace {

std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();  // a file with CRLF line ends
    }
    lines.push_back(line);
  }
  return lines;
}

std::size_t indentation(const std::string& line) {
  return line.find_first_not_of(' ') == std::string::npos ? line.size()
                                                          : line.find_first_not_of(' ');
}

// What people most often get wrong, when the parser's words do not say it:
// a tab in the indentation, a list entry without its "- ", a line indented
// unlike its neighbours. "" when none of these is it.
std::string syntax_hint(const std::string& text, int line_index) {
  const auto lines = text_lines(text);
  if (line_index < 0 || static_cast<std::size_t>(line_index) >= lines.size()) {
    return "";
  }
  for (int i = line_index; i >= 0 && i >= line_index - 1; --i) {
    const auto& line = lines[static_cast<std::size_t>(i)];
    const auto text_start = line.find_first_not_of(" \t");
    if (line.substr(0, text_start).find('\t') != std::string::npos) {
      return "line " + std::to_string(i + 1) +
             " is indented with a tab: YAML indents with spaces only";
    }
  }
  const auto& line = lines[static_cast<std::size_t>(line_index)];
  const std::size_t indent = indentation(line);
  // A sibling above at the same indentation that starts an entry with "- ".
  for (int i = line_index - 1; i >= 0; --i) {
    const auto& above = lines[static_cast<std::size_t>(i)];
    if (indentation(above) < indent || above.find_first_not_of(' ') == std::string::npos) {
      if (indentation(above) < indent) {
        break;
      }
      continue;
    }
    if (indentation(above) == indent && above.compare(indent, 2, "- ") == 0 &&
        line.compare(indent, 2, "- ") != 0) {
      return "is a '- ' missing at the start of line " + std::to_string(line_index + 1) +
             "? Each entry of a list starts with '- '";
    }
  }
  if (line_index > 0) {
    const auto& above = lines[static_cast<std::size_t>(line_index - 1)];
    // The keys of an entry start after its "- ".
    const std::size_t above_keys =
        indentation(above) + (above.compare(indentation(above), 2, "- ") == 0 ? 2 : 0);
    // Only a key deeper than the keys above it, after a plain `key: value`
    // (not a block scalar's `|` or `>`, whose lines may go anywhere).
    const char last = above.empty() ? ' ' : above.back();
    if (indent > above_keys && above.find(':') != std::string::npos && last != ':' && last != '|' &&
        last != '>' && line.find(':') != std::string::npos) {
      return "line " + std::to_string(line_index + 1) + " is indented by " +
             std::to_string(indent) + " spaces, the key on line " + std::to_string(line_index) +
             " by " + std::to_string(above_keys) + ": keys of one mapping line up under each other";
    }
  }
  return "";
}

}  // namespace

std::optional<YAML::Node> load_yaml_text(const std::string& text, ParseContext& ctx) {
  // yaml-cpp would read a NUL as the end of a value and keep what follows
  // as other text: what the file says is not what would be judged.
  if (const auto nul = nul_byte(text)) {
    ctx.diagnostics().error(ctx.locate(*nul),
                            "a NUL byte: the file is not text (saved in another encoding?)");
    return std::nullopt;
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    ctx.diagnostics().error(ctx.locate(e.mark),
                            "the document nests deeper than " + std::to_string(e.depth()) +
                                " levels: no contract or config does; is it generated?");
    return std::nullopt;
  } catch (const YAML::ParserException& e) {
    const std::string hint = syntax_hint(text, e.mark.line);
    ctx.diagnostics().error(ctx.locate(e.mark),
                            "YAML syntax error: " + e.msg + (hint.empty() ? "" : "; " + hint));
    return std::nullopt;
  }
  // One document a file: what a second one says would never be judged.
  if (const auto second = common::find_second_yaml_document(text)) {
    ctx.diagnostics().error({ctx.file(), second->line, second->column},
                            second->syntax_error.empty()
                                ? "a second YAML document (after '---'): a file holds one; put "
                                  "its checks in the first, or in a file of its own"
                                : "YAML syntax error: " + second->syntax_error);
    return std::nullopt;
  }
  // Before anything walks the tree: an alias cycle would overflow the stack
  // of every walk below, and a billion-laughs document never let it end.
  if (const auto problem = common::find_yaml_alias_problem(text)) {
    ctx.diagnostics().error({ctx.file(), problem->line, problem->column}, problem->message);
    return std::nullopt;
  }
  std::set<std::pair<int, int>> reported;
  report_duplicate_keys(root, ctx, reported);
  return root;
}

std::optional<YAML::Node> load_yaml_file(const std::filesystem::path& path, ParseContext& ctx) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    // An ifstream opens a directory and reads nothing: an empty document.
    ctx.diagnostics().error({ctx.file(), 0, 0}, "is a directory, not a file");
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ctx.diagnostics().error({ctx.file(), 0, 0},
                            "cannot read the file; check that it exists and is readable");
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_yaml_text(text.str(), ctx);
}

std::optional<YAML::Node> find_child(const YAML::Node& node, std::string_view key) {
  if (!node.IsMap()) {
    return std::nullopt;
  }
  for (const auto& pair : node) {
    if (pair.first.IsScalar() && pair.first.Scalar() == key) {
      return pair.second;
    }
  }
  return std::nullopt;
}

std::string scalar_child(const YAML::Node& node, std::string_view key) {
  const auto child = find_child(node, key);
  return child && child->IsScalar() ? child->Scalar() : std::string();
}

std::string describe_node_type(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

nlohmann::ordered_json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      auto object = nlohmann::ordered_json::object();
      for (const auto& pair : node) {
        object[pair.first.as<std::string>("")] = yaml_to_json(pair.second);
      }
      return object;
    }
    case YAML::NodeType::Sequence: {
      auto array = nlohmann::ordered_json::array();
      for (const auto& item : node) {
        array.push_back(yaml_to_json(item));
      }
      return array;
    }
    case YAML::NodeType::Scalar: {
      const auto& text = node.Scalar();
      if (is_plain(node)) {
        if (text == "true" || text == "false") {
          return text == "true";
        }
        long long number = 0;
        const auto* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, number);
        if (ec == std::errc() && ptr == end && !text.empty()) {
          return number;
        }
      }
      return text;
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return nullptr;
}

}  // namespace envcontract::contracts
