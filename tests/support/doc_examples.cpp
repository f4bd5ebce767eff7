#include "tests/support/doc_examples.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/json_text.hpp"

namespace envcontract::testing {
namespace {

using Json = nlohmann::ordered_json;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

// Values that differ from run to run, made the same on both sides.
std::string neutral(std::string text) {
  static const std::vector<std::pair<std::regex, std::string>> volatile_values = {
      {std::regex(R"re(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d))re"), "<time>"},
      {std::regex(R"re(\b[0-9a-f]{12,64}\b)re"), "<hash>"},
      {std::regex(R"re(\(\d+(\.\d+)? s\))re"), "(<seconds>)"},
      {std::regex(R"re(\b\d+ ms\b)re"), "<n> ms"},
      {std::regex(R"re(~?\d+(\.\d+)?% CPU)re"), "<n>% CPU"},
      {std::regex(R"re(("(uptime_seconds|id|scan_id|busiest_tid|tid)": )\d+)re"), "$1<n>"},
      {std::regex(R"re(/api/v1/scans/\d+)re"), "/api/v1/scans/<n>"},
      {std::regex(R"re(\bscan \d+ )re"), "scan <n> "},
      {std::regex(R"re(^(envcontract_\S+) \S+$)re"), "$1 <value>"},
      {std::regex(R"re( {2,})re"), " "},
  };
  for (const auto& [pattern, replacement] : volatile_values) {
    text = std::regex_replace(text, pattern, replacement);
  }
  while (!text.empty() && text.back() == ' ') {
    text.pop_back();
  }
  return text;
}

// A shown line matches a real one: its parts around "..." in order, the
// first at the start (a cut line is a prefix).
bool line_matches(const std::string& shown, const std::string& real) {
  std::size_t at = 0;
  std::size_t from = 0;
  bool first = true;
  for (;;) {
    const auto dots = shown.find("...", from);
    const std::string part = shown.substr(from, dots == std::string::npos ? dots : dots - from);
    if (!part.empty()) {
      const auto found = real.find(part, at);
      if (found == std::string::npos || (first && found != 0)) {
        return false;
      }
      at = found + part.size();
    }
    first = false;
    if (dots == std::string::npos) {
      return true;
    }
    from = dots + 3;
  }
}

// A name or path replaced only where it stands whole: a host name "vm" is
// not the "vm" of "nvme", port 4000 not the start of port 40001.
bool whole_at(const std::string& text, std::size_t at, std::size_t size) {
  const auto part_of_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  };
  return (at == 0 || !part_of_name(text[at - 1])) &&
         (at + size == text.size() || !part_of_name(text[at + size]));
}

std::string apply(std::string text,
                  const std::vector<std::pair<std::string, std::string>>& replacements) {
  for (const auto& [from, to] : replacements) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
      if (whole_at(text, at, from.size())) {
        text.replace(at, from.size(), to);
        at += to.size();
      } else {
        at += from.size();
      }
    }
  }
  return text;
}

std::string text_differs(const std::string& shown, const std::string& real) {
  const auto real_lines = lines_of(real);
  std::size_t next = 0;
  for (const auto& raw : lines_of(shown)) {
    const std::string line = neutral(raw);
    if (line.empty() || line == "..." || line == " ...") {
      continue;
    }
    std::size_t found = next;
    while (found < real_lines.size() && !line_matches(line, neutral(real_lines[found]))) {
      ++found;
    }
    if (found == real_lines.size()) {
      return "the documented line\n  " + raw + "\nis not in the real output (in order):\n" + real;
    }
    next = found + 1;
  }
  return "";
}

// What a line of only `...` stands for where it is: in a list, any items
// ("..."); in an object, any keys ("...": "..."); with a comma when more follows.
std::string elision_for(const std::string& before, const std::string& after) {
  std::vector<char> open;
  bool in_string = false;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const char c = before[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      open.push_back(c);
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
    }
  }
  const auto next = after.find_first_not_of(" \n");
  const bool last = next == std::string::npos || after[next] == ']' || after[next] == '}';
  const std::string item = !open.empty() && open.back() == '{' ? R"("...": "...")" : R"("...")";
  return item + (last ? "" : ",");
}

// `{...}`, `[...]`, `, ...]` and lines of `...` are the documents' elisions:
// marked so that the comparison knows what it may not check.
Json parse_shown_json(std::string text) {
  text = std::regex_replace(text, std::regex(R"re(\{\s*\.\.\.\s*\})re"), R"({"...": "..."})");
  text = std::regex_replace(text, std::regex(R"re(\[\s*\.\.\.\s*\])re"), R"(["..."])");
  text = std::regex_replace(text, std::regex(R"re(,\s*\.\.\.\s*\])re"), R"(, "..."])");
  const auto lines = lines_of(text);
  std::string marked;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    const auto first = line.find_first_not_of(' ');
    if (first != std::string::npos &&
        (line.substr(first) == "..." || line.substr(first) == "...,")) {
      std::string after;
      for (std::size_t j = i + 1; j < lines.size(); ++j) {
        after += lines[j] + "\n";
      }
      line = line.substr(0, first) + elision_for(marked, after);
    }
    marked += line + "\n";
  }
  return Json::parse(marked, nullptr, false);
}

std::string json_differs(const Json& shown, const Json& real, const std::string& where) {
  if (shown.is_string() && shown.get<std::string>() == "...") {
    return "";
  }
  if (shown.is_object()) {
    if (!real.is_object()) {
      return where + ": an object is documented, the agent gave " + common::json_text(real);
    }
    // `...` in an object leaves keys out: the shown ones are still compared.
    const bool elided = shown.contains("...");
    for (const auto& [key, value] : shown.items()) {
      if (key == "...") {
        continue;
      }
      if (!real.contains(key)) {
        return where + "." + key + ": documented, but the agent does not send it";
      }
      if (auto problem = json_differs(value, real[key], where + "." + key); !problem.empty()) {
        return problem;
      }
    }
    for (const auto& [key, value] : real.items()) {
      if (!elided && !shown.contains(key)) {
        return where + "." + key + ": the agent sends it, the document does not show it";
      }
    }
    return "";
  }
  if (shown.is_array()) {
    if (!real.is_array()) {
      return where + ": a list is documented, the agent gave " + common::json_text(real);
    }
    const bool elided = std::find(shown.begin(), shown.end(), Json("...")) != shown.end();
    if (!elided) {
      if (real.size() != shown.size()) {
        return where + ": " + std::to_string(shown.size()) + " items documented, the agent gave " +
               std::to_string(real.size());
      }
      for (std::size_t i = 0; i < shown.size(); ++i) {
        if (auto problem = json_differs(shown[i], real[i], where + "[" + std::to_string(i) + "]");
            !problem.empty()) {
          return problem;
        }
      }
      return "";
    }
    // With items left out, the shown ones must be among the real ones, in order.
    std::size_t next = 0;
    for (std::size_t i = 0; i < shown.size(); ++i) {
      if (shown[i] == "...") {
        continue;
      }
      const std::string item = where + "[" + std::to_string(i) + "]";
      std::string first_problem = "the agent's list has no more items";
      bool found = false;
      for (bool first = true; next < real.size() && !found; first = false) {
        auto problem = json_differs(shown[i], real[next++], item);
        found = problem.empty();
        if (first && !found) {
          first_problem = problem;
        }
      }
      if (!found) {
        return item +
               ": no item of the agent's list matches it; the next one differs: " + first_problem;
      }
    }
    return "";
  }
  if (shown.is_string()) {
    if (!real.is_string() ||
        !line_matches(neutral(shown.get<std::string>()), neutral(real.get<std::string>()))) {
      return where + ": documented " + common::json_text(shown) + ", the agent gave " +
             common::json_text(real);
    }
    return "";
  }
  if (shown.type() != real.type() && !(shown.is_number() && real.is_number())) {
    return where + ": documented " + common::json_text(shown) + ", the agent gave " +
           common::json_text(real);
  }
  return "";
}

// A trailing line of three digits (curl -w '%{http_code}\n') split off. By
// hand: std::regex recurses per character and overflows on a whole report.
std::pair<std::string, std::string> split_status(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.pop_back();
  }
  const auto newline = text.rfind('\n');
  if (newline == std::string::npos || text.size() - newline - 1 != 3) {
    return {text, ""};
  }
  const std::string last = text.substr(newline + 1);
  if (!std::all_of(last.begin(), last.end(),
                   [](unsigned char c) { return std::isdigit(c) != 0; })) {
    return {text, ""};
  }
  return {text.substr(0, newline), last};
}

}  // namespace

std::vector<DocExample> doc_examples(const std::filesystem::path& markdown) {
  std::ifstream in(markdown);
  std::vector<DocExample> examples;
  std::string skip;
  std::string previous;
  bool in_block = false;
  bool in_console = false;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.rfind("```", 0) == 0) {
      in_console = !in_block && line == "```console";
      in_block = !in_block;
      if (in_console) {
        static const std::regex not_run(R"(<!-- not run: (.*) -->)");
        std::smatch match;
        skip = std::regex_search(previous, match, not_run) ? match[1].str() : "";
      }
      previous = line;
      continue;
    }
    if (!line.empty()) {
      previous = line;
    }
    if (!in_console) {
      continue;
    }
    if (line.rfind("$ ", 0) == 0) {
      examples.push_back({markdown.filename().string(), number, line.substr(2), "", skip});
      continue;
    }
    if (examples.empty()) {
      continue;
    }
    auto& example = examples.back();
    if (example.shown.empty() && !example.command.empty() && example.command.back() == '\\') {
      example.command.pop_back();
      example.command += line;
      continue;
    }
    example.shown += (example.shown.empty() ? "" : "\n") + line;
  }
  return examples;
}

std::string replace_whole(std::string text,
                          const std::vector<std::pair<std::string, std::string>>& replacements) {
  return apply(std::move(text), replacements);
}

std::string substance_differs(
    const std::string& shown, const std::string& real,
    const std::vector<std::pair<std::string, std::string>>& replacements) {
  const std::string translated = apply(real, replacements);
  const auto first = shown.find_first_not_of(" \n");
  if (first != std::string::npos && (shown[first] == '{' || shown[first] == '[')) {
    const auto [shown_json, shown_status] = split_status(shown);
    const auto [real_json, real_status] = split_status(translated);
    if (shown_status != real_status) {
      return "status " + shown_status + " documented, the agent answered " + real_status;
    }
    const Json documented = parse_shown_json(shown_json);
    if (documented.is_discarded()) {
      return "the documented output is not JSON (after its ... elisions):\n" + shown_json;
    }
    const Json answered = Json::parse(real_json, nullptr, false);
    if (answered.is_discarded()) {
      return "the real output is not JSON:\n" + real_json;
    }
    return json_differs(documented, answered, "$");
  }
  return text_differs(shown, translated);
}

}  // namespace envcontract::testing
