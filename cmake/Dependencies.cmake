# All dependencies are Debian 12 packages; scripts/deps.sh installs them.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(yaml-cpp 0.7 REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(CLI11 2.1 REQUIRED)
find_package(spdlog 1.10 REQUIRED)
# Boost.Process is header-only but needs Boost.Filesystem.
find_package(Boost 1.74 REQUIRED COMPONENTS filesystem)
pkg_check_modules(libelf REQUIRED IMPORTED_TARGET libelf>=0.188)

if(ENVCONTRACT_TESTS)
  find_package(GTest 1.12 REQUIRED)
endif()
