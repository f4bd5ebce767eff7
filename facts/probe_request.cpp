#include "facts/probe_request.hpp"

#include <algorithm>

namespace envcontract::facts {
namespace {

void append_unique(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) {
    list.push_back(item);
  }
}

}  // namespace

void ProbeRequest::add_import(const std::string& module) {
  append_unique(imports, module);
}

void ProbeRequest::add_library_name(const std::string& name) {
  append_unique(library_names, name);
}

void ProbeRequest::add_path_pattern(const std::string& pattern) {
  append_unique(path_patterns, pattern);
}

void ProbeRequest::add_device_glob(const std::string& pattern) {
  append_unique(device_globs, pattern);
}

void ProbeRequest::add_tool(const std::string& name) {
  append_unique(tools, name);
}

}  // namespace envcontract::facts
