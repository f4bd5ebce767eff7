#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

// Reading the small text files that describe envs (pyvenv.cfg, METADATA,
// version.py) without trusting them: size-capped, never executed.
namespace envcontract::probes {

// The file's text, or nullopt when it cannot be read. Files larger than
// `max_bytes` are read only up to that size: metadata we need is at the top.
std::optional<std::string> read_small_file(const std::filesystem::path& path,
                                           std::size_t max_bytes = 256 * 1024);

// "key = value" lines (pyvenv.cfg); keys lower-cased, values trimmed.
std::map<std::string, std::string> parse_key_values(const std::string& text);

// RFC 822-style headers up to the first blank line (METADATA, PKG-INFO).
// The first occurrence of a header wins.
std::map<std::string, std::string> parse_headers(const std::string& text);

// Module-level assignments of string literals or None, such as
// `__version__ = '2.10.0+cu129'` or `cuda = None`, read without running the
// code. Values are the literal's contents; None becomes nullopt.
std::map<std::string, std::optional<std::string>> parse_python_assignments(
    const std::string& source);

std::string trim(const std::string& text);

// A field of an untrusted JSON object as text: the string itself, "" when
// absent or null, the JSON text of anything else. Never throws on a type
// surprise, as nlohmann's value() would.
std::string text_field(const nlohmann::ordered_json& object, const char* key);

// Existence tests that never throw: an unreadable path simply does not count.
bool path_exists(const std::filesystem::path& path);
bool dir_exists(const std::filesystem::path& path);

}  // namespace envcontract::probes
