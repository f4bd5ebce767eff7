#include "probes/small_files.hpp"

#include "common/json_text.hpp"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

namespace envcontract::probes {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return {};
  }
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::string text_field(const nlohmann::ordered_json& object, const char* key) {
  if (!object.is_object()) {
    return {};
  }
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return {};
  }
  return it->is_string() ? it->get<std::string>() : common::json_text(*it);
}

bool path_exists(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::exists(path, error);
}

bool dir_exists(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error);
}

std::optional<std::string> read_small_file(const std::filesystem::path& path,
                                           std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  // Grow with what is there: the cap bounds hostile files, it is not a size hint.
  std::string text;
  char chunk[65536];
  while (text.size() < max_bytes && in) {
    in.read(chunk, static_cast<std::streamsize>(std::min(sizeof chunk, max_bytes - text.size())));
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    return std::nullopt;
  }
  return text;
}

std::map<std::string, std::string> parse_key_values(const std::string& text) {
  std::map<std::string, std::string> values;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto equals = line.find('=');
    if (equals == std::string::npos || trim(line).starts_with("#")) {
      continue;
    }
    std::string key = trim(line.substr(0, equals));
    for (auto& c : key) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    values.emplace(key, trim(line.substr(equals + 1)));
  }
  return values;
}

std::map<std::string, std::string> parse_headers(const std::string& text) {
  std::map<std::string, std::string> headers;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (trim(line).empty()) {
      break;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos || line.starts_with(" ") || line.starts_with("\t")) {
      continue;
    }
    headers.emplace(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
  }
  return headers;
}

std::map<std::string, std::optional<std::string>> parse_python_assignments(
    const std::string& source) {
  // name = 'text' | "text" | None, at the start of a line (module level).
  static const std::regex assignment(
      R"re(^([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*[A-Za-z_.\[\], ]+)?=\s*(?:'([^'\\\n]*)'|"([^"\\\n]*)"|(None))\s*(?:#.*)?$)re");
  std::map<std::string, std::optional<std::string>> values;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    std::smatch match;
    if (!std::regex_match(line, match, assignment)) {
      continue;
    }
    std::optional<std::string> value;
    if (match[2].matched) {
      value = match[2].str();
    } else if (match[3].matched) {
      value = match[3].str();
    }
    // Later assignments win, as when Python runs the module.
    values[match[1].str()] = value;
  }
  return values;
}

}  // namespace envcontract::probes
