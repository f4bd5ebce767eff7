#include "common/shown_values.hpp"

namespace envcontract::common {

bool variable_value_shown(std::string_view name) {
  for (const char* secret : {"TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH", "API_KEY"}) {
    if (name.find(secret) != std::string_view::npos) {
      return false;
    }
  }
  const auto ends_with = [&](std::string_view tail) { return name.ends_with(tail); };
  return ends_with("PATH") || ends_with("HOME") || ends_with("PREFIX") || ends_with("ROOT") ||
         ends_with("_DIR") || name == "LD_PRELOAD" || name == "VIRTUAL_ENV" ||
         name == "CONDA_PREFIX" || name == "CONDA_DEFAULT_ENV" || name == "CONDA_SHLVL" ||
         name == "CONDA_EXE" || name == "CONDA_PYTHON_EXE" || name == "PYTHONNOUSERSITE" ||
         name == "PYTHONSAFEPATH";
}

std::string without_credentials(std::string text) {
  for (std::size_t at = text.find("://"); at != std::string::npos; at = text.find("://", at + 3)) {
    const std::size_t start = at + 3;
    // The authority ends at the path, query or fragment (or a blank); its
    // user information ends at its last '@'.
    std::size_t end = text.find_first_of("/?# \t", start);
    const std::string_view authority(text.data() + start,
                                     (end == std::string::npos ? text.size() : end) - start);
    const std::size_t last_at = authority.rfind('@');
    if (last_at != std::string_view::npos && last_at > 0) {
      text.replace(start, last_at, "***");
      end = end == std::string::npos ? std::string::npos : end - last_at + 3;
    }
    // anaconda.org's token channels: https://conda.anaconda.org/t/TOKEN/channel
    if (end != std::string::npos && text.compare(end, 3, "/t/") == 0) {
      const std::size_t token = end + 3;
      const std::size_t token_end = text.find_first_of("/ \t", token);
      const std::size_t length = (token_end == std::string::npos ? text.size() : token_end) - token;
      if (length > 0) {
        text.replace(token, length, "***");
      }
    }
  }
  return text;
}

std::string shown_variable_value(std::string_view name, const std::string& value) {
  if (!variable_value_shown(name)) {
    return "(set, " + std::to_string(value.size()) + " bytes; value not shown)";
  }
  return without_credentials(value);
}

}  // namespace envcontract::common
