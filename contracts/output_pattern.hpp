#pragma once

#include <string>

// The patterns a contract sets for what env code prints (`expect_output` of
// smoke and command checks). They are matched with RE2, in time linear in
// the output whatever the pattern: the output is the env's to choose, and a
// backtracking matcher (std::regex) spent minutes on 5,000 a's against
// `(a|aa)*c`, holding up the scan. RE2 is wrapped here and nowhere else.
namespace envcontract::contracts {

// Why RE2 refuses `pattern`, in RE2's words and with what to write instead
// (backreferences and lookaround have no linear-time match); "" when it
// accepts it.
std::string output_pattern_problem(const std::string& pattern);

// Whether `pattern` matches anywhere in the first 4 KB of `output` (a search,
// not a whole-output match; `^` and `$` are the output's start and end
// unless the pattern begins with `(?m)`). A pattern RE2 refuses matches
// nothing: loading the contract refused it already.
bool output_matches(const std::string& output, const std::string& pattern);

}  // namespace envcontract::contracts
