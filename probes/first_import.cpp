#include "probes/first_import.hpp"

namespace envcontract::probes {
namespace {

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// Moves `line` past `keyword` and the blanks after it; false, `line`
// untouched, when it does not start with that keyword.
bool skip_keyword(std::string_view& line, std::string_view keyword) {
  if (!line.starts_with(keyword) || line.size() == keyword.size() ||
      !is_blank(line[keyword.size()])) {
    return false;
  }
  line.remove_prefix(keyword.size());
  while (!line.empty() && is_blank(line.front())) {
    line.remove_prefix(1);
  }
  return true;
}

// The dotted name at the start of `line` ("torch.cuda"), consumed; its
// first component is returned, "" when there is none.
std::string take_dotted_name(std::string_view& line) {
  std::string top;
  bool first = true;
  while (!line.empty() && is_name_start(line.front())) {
    std::size_t length = 1;
    while (length < line.size() && is_name_char(line[length])) {
      ++length;
    }
    if (first) {
      top = std::string(line.substr(0, length));
      first = false;
    }
    line.remove_prefix(length);
    if (line.empty() || line.front() != '.') {
      break;
    }
    line.remove_prefix(1);
    if (line.empty() || !is_name_start(line.front())) {
      return "";  // "import torch." is not a statement
    }
  }
  return top;
}

std::string first_import_of_line(std::string_view line) {
  if (skip_keyword(line, "import")) {
    auto name = take_dotted_name(line);
    // What may follow the first name: the end, "as x", ", other", "; more", "# ...".
    if (!line.empty() && !is_blank(line.front()) && line.front() != ',' && line.front() != ';' &&
        line.front() != '#') {
      return "";
    }
    return name;
  }
  if (skip_keyword(line, "from")) {
    auto name = take_dotted_name(line);
    while (!line.empty() && is_blank(line.front())) {
      line.remove_prefix(1);
    }
    if (name == "__future__" || !skip_keyword(line, "import")) {
      return "";  // compile-time, not an import; or not a from-import at all
    }
    return name;
  }
  return "";
}

}  // namespace

std::string first_import_of_snippet(std::string_view code) {
  while (!code.empty()) {
    const auto end = code.find('\n');
    std::string_view line = code.substr(0, end);
    code = end == std::string_view::npos ? std::string_view() : code.substr(end + 1);
    if (line.ends_with('\r')) {
      line.remove_suffix(1);
    }
    if (line.ends_with('\\')) {
      return "";
    }
    const auto text = line.find_first_not_of(" \t");
    if (text == std::string_view::npos || line[text] == '#') {
      continue;  // blank or a comment
    }
    // An indented first statement is a syntax error; a docstring or any
    // other statement may do anything before its imports.
    return text == 0 ? first_import_of_line(line) : "";
  }
  return "";
}

bool snippet_imports(std::string_view code, std::string_view module) {
  while (!code.empty()) {
    const auto end = code.find('\n');
    std::string_view line = code.substr(0, end);
    code = end == std::string_view::npos ? std::string_view() : code.substr(end + 1);
    // Each statement of the line: "import os; import torch".
    while (!line.empty()) {
      const auto semicolon = line.find(';');
      std::string_view statement = line.substr(0, semicolon);
      line = semicolon == std::string_view::npos ? std::string_view() : line.substr(semicolon + 1);
      while (!statement.empty() && is_blank(statement.front())) {
        statement.remove_prefix(1);
      }
      if (skip_keyword(statement, "from")) {
        if (take_dotted_name(statement) == module) {
          return true;
        }
        continue;
      }
      if (!skip_keyword(statement, "import")) {
        continue;
      }
      // import a, b.c as d, e
      while (!statement.empty()) {
        if (take_dotted_name(statement) == module) {
          return true;
        }
        const auto comma = statement.find(',');
        if (comma == std::string_view::npos) {
          break;
        }
        statement.remove_prefix(comma + 1);
        while (!statement.empty() && is_blank(statement.front())) {
          statement.remove_prefix(1);
        }
      }
    }
  }
  return false;
}

}  // namespace envcontract::probes
