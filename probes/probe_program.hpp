#pragma once

#include <string_view>

namespace envcontract::probes {

// The text of python/envcontract_probe.py, embedded at build time: the agent
// carries its probe program and never fetches one.
std::string_view probe_program_source();

}  // namespace envcontract::probes
