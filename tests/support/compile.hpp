#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace envcontract::testing {

// Compiles C `source` into a shared library at `output` with the given extra
// arguments (-L, -l, -Wl,...). Fails the test on a compiler error.
void build_shared_library(const std::filesystem::path& output, const std::string& source,
                          const std::vector<std::string>& arguments = {});

// The same for C++ `source`, compiled by g++.
void build_cxx_shared_library(const std::filesystem::path& output, const std::string& source,
                              const std::vector<std::string>& arguments = {});

}  // namespace envcontract::testing
