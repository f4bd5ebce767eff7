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

// Whether any line of the snippet imports top-level `module` (`import
// torch`, `import os, torch.cuda as c`, `from torch import nn`, at any
// indentation): then it needs that module, and is not run once the module
// is known not to import. Read from the text as written; an import made
// some other way (importlib) is not seen, and the snippet runs and says so.
bool snippet_imports(std::string_view code, std::string_view module);

}  // namespace envcontract::probes
