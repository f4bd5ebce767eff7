#pragma once

#include <optional>
#include <string>

#include "contracts/env_facts.hpp"
#include "contracts/judgement.hpp"

namespace envcontract::contracts {

// A package a check wants that the env's interpreter does not see, but
// that its prefix holds for another Python (lib/python3.11/site-packages
// beside a python3.10, after an upgrade that stopped half-way): the check
// fails with cause `wrong_python`, naming where it is, for which Python,
// and what the env's records say against its interpreter. False when
// `name` (a module or a distribution) is installed for no other Python.
bool fail_if_installed_for_another_python(CheckResult& result, const EnvFactsView& facts,
                                          const std::string& name);

}  // namespace envcontract::contracts
