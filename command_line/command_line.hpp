#pragma once

// The command-line grammar both tools (envcontractd, fleetctl) share, over
// CLI11: a mistyped verb or flag named with the nearest known one, and -o
// (the output format) before the verb or after it, meaning the same.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace envcontract::command_line {

// A command line ready for CLI11, or the problem that stops it ("" none).
struct CommandLine {
  std::vector<std::string> arguments;  // argv[0] included
  std::string problem;                 // "PROGRAM VERB: ..." for stderr; exit 2
};

// Reads argv against `app`'s verbs and flags before CLI11 does:
// - an unknown verb: "unknown command 'sacn' (did you mean 'scan'?); the
//   commands are: ...";
// - a flag the verb does not take: "unknown flag '--contrat' (did you mean
//   '--contract'?)", the nearest flag of that verb (CLI11 alone would say
//   only that a required flag is missing, or that arguments were not
//   expected); a flag of other verbs names them ("--allowed-host is a flag
//   of serve, fleet, not of scan"; before the verb: "give it after the verb");
// - -o FORMAT before the verb moves after it, where the verb's own -o reads
//   it (and checks it against its formats); a verb without -o, or a second
//   -o of another value after the verb, is a problem.
CommandLine read_command_line(std::string_view program, const CLI::App& app, int argc,
                              const char* const* argv);

// The verb's -o,--output,--format FORMAT, one of `formats`; a value outside
// them is refused with the formats the verb prints.
CLI::Option* add_format_option(CLI::App* verb, std::string& format,
                               const std::vector<std::string>& formats, const std::string& help);

// Parses `line` (from read_command_line) with `app`. nullopt when it parsed;
// else the exit status (0 after --help or --version, 2 for an error, which
// CLI11 has printed).
std::optional<int> parse_command_line(CLI::App& app, const CommandLine& line);

}  // namespace envcontract::command_line
