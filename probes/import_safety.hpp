#pragma once

#include "discovery/python_env.hpp"
#include "probes/activation.hpp"
#include "probes/fact_names.hpp"
#include "probes/search_path.hpp"

// Discovery holds the env's own files to the StrictModes rule
// (discovery/env_safety.hpp). What the interpreter imports reaches further: PYTHONPATH
// set by activation, the user site, a base's site dirs and standard library,
// where .pth files and editable installs point. Code loaded from there runs
// with the env user's rights as surely as the env's own, so it is held to the
// same rule before any of the env's code runs.
namespace envcontract::probes {

// Adds to env.unsafe every path of `search_path` (its entries and unlisted
// places) that someone other than root and env.run_as could write, and sets
// env.imports_unchecked when the path is incomplete; code_refusal(env) then
// says why none of the env's code runs. Marks env.imports_checked.
void refuse_unsafe_imports(PythonEnv& env, const SearchPath& search_path);

// The same for a caller without static facts (the `probe` verb, or a scan
// whose static facts failed): the search path is computed from `activation`,
// reading as the env's user. Whatever stops the check (the user's
// credentials cannot be taken, the files cannot be read) sets
// env.imports_unchecked: the env's code is not run on an unfinished check.
void refuse_unsafe_imports(PythonEnv& env, const ActivatedEnvironment& activation);

}  // namespace envcontract::probes
