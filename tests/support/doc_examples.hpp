#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace envcontract::testing {

// One `$ command` of a ```console block in a Markdown file, with the output
// the document shows under it.
struct DocExample {
  std::string file;     // as given, for messages
  int line = 0;         // of the `$` line
  std::string command;  // continuation lines (ending in `\`) joined
  std::string shown;    // the documented output, lines joined with '\n'
  std::string skip;     // why it is not run: `<!-- not run: WHY -->` before its block
};

// Every `$ ` command of the ```console blocks of `markdown`.
std::vector<DocExample> doc_examples(const std::filesystem::path& markdown);

// Whether `real` output has the substance of the `shown` one, after both are
// normalised (`replacements` applied to `real` first: machine names and
// paths to the document's; then timestamps, durations, ids, hashes, CPU
// shares and runs of spaces made neutral). Text: every shown line, in order,
// is in the real output, a line being a prefix of its real line ("long lines
// are cut"), `...` standing for any text, a line of `...` for any lines.
// JSON: the same keys at every level (`{...}` elides an object, `, ...]` the
// rest of a list), equal strings by the text rule, equal kinds of values.
// A trailing status code line (curl -w) is compared as text. Returns "" when
// it has, else what differs.
// `text` with each `from` replaced by its `to` where it stands whole (not
// inside a longer name or number).
std::string replace_whole(std::string text,
                          const std::vector<std::pair<std::string, std::string>>& replacements);

std::string substance_differs(const std::string& shown, const std::string& real,
                              const std::vector<std::pair<std::string, std::string>>& replacements);

}  // namespace envcontract::testing
