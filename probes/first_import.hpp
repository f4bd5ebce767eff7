#pragma once

#include <string>
#include <string_view>

namespace envcontract::probes {

// The top-level module a smoke snippet imports before anything else it does,
// read from its text: the first statement, unindented after blank and comment
// lines, must be `import M...` or `from M... import ...`. "" when the text
// does not say so plainly (a docstring first, a relative import, a line
// continued with a backslash): such a snippet is run in an interpreter of its
// own rather than after an import made for it.
std::string first_import_of_snippet(std::string_view code);

}  // namespace envcontract::probes
