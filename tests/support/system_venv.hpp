#pragma once

#include <filesystem>
#include <string>

namespace envcontract::testing {

// "3.11": the X.Y of Debian's /usr/bin/python3.
std::string system_python_version();

// A venv over /usr/bin/python3 laid out as `python3 -m venv --without-pip`
// lays it out (pyvenv.cfg, bin/python, an empty site-packages), made in
// milliseconds. Returns `prefix`.
std::filesystem::path make_system_venv(const std::filesystem::path& prefix);

// Its site-packages directory.
std::filesystem::path system_venv_site(const std::filesystem::path& prefix);

// Lets every user pass through and list `dir` (0755), as the envs' users
// must when the agent reads and runs root's envs as a uid of their own.
void open_to_all(const std::filesystem::path& dir);

}  // namespace envcontract::testing
