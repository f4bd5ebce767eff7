#pragma once

#include <filesystem>

namespace envcontract::testing {

// The demo fleet host (tests/fixtures/make_demo_host.py). Under ctest it is
// built once per run by the `demo_host.build` fixture and named by
// ENVCONTRACT_DEMO_HOST; a test binary run by hand builds its own copy in a
// temporary directory. Tests must not modify it: copy or build another one.
const std::filesystem::path& demo_host();

// Builds a fresh demo host into `directory` (which must not exist or be empty).
void build_demo_host(const std::filesystem::path& directory);

}  // namespace envcontract::testing
