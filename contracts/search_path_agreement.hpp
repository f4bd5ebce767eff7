#pragma once

#include <optional>

#include "contracts/env_facts.hpp"
#include "contracts/judgement.hpp"

namespace envcontract::contracts {

// Static facts and the interpreter must agree on where each imported module
// lives: every import the dynamic stages made is compared with where the
// env's files say `import` finds it. A disagreement (a sitecustomize or a
// .pth file moving sys.path, PYTHONPATH set outside activation, a layout the
// agent reads wrongly) means the static checks may have judged the wrong
// copy: the env gets an `error` check of its own, `env:search-path`, with both
// paths, never a silent pick of one side. nullopt when they agree.
std::optional<CheckResult> search_path_agreement(const EnvFactsView& facts);

}  // namespace envcontract::contracts
