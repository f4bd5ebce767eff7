# All dependencies are Debian 12 packages; scripts/lib/common.sh lists them.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(yaml-cpp 0.7 REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(CLI11 2.1 REQUIRED)
find_package(spdlog 1.10 REQUIRED)
# Boost.Asio (the process runner's event loop, the HTTP clients) and
# Boost.Beast (the HTTP parsers: daemon/http_wire.cpp, fleet/http_exchange.cpp)
# are header-only.
find_package(Boost 1.74 REQUIRED)
pkg_check_modules(libelf REQUIRED IMPORTED_TARGET libelf>=0.188)
pkg_check_modules(sqlite3 REQUIRED IMPORTED_TARGET sqlite3>=3.40)
# zlib: the HTTP side's gzip answers.
pkg_check_modules(zlib REQUIRED IMPORTED_TARGET zlib)
pkg_check_modules(libsystemd REQUIRED IMPORTED_TARGET libsystemd)
# RE2 (Debian 12: 20220601) matches contracts' output patterns in linear time.
pkg_check_modules(re2 REQUIRED IMPORTED_TARGET re2)
# GNU Nettle: SHA-256 and HMAC (common/sha256.cpp), without OpenSSL's
# resident cost.
pkg_check_modules(nettle REQUIRED IMPORTED_TARGET nettle>=3.8)

if(ENVCONTRACT_TESTS)
  find_package(GTest 1.12 REQUIRED)
  # The tests' own HTTP client and receiver, independent of the agent's.
  # Debian builds cpp-httplib as a shared library; its header only declares.
  pkg_check_modules(httplib REQUIRED IMPORTED_TARGET cpp-httplib>=0.11)
endif()
