// command_line/command_line.cpp: the grammar both tools share, read before CLI11 parses it.
#include "command_line/command_line.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace envcontract::command_line {
namespace {

using Words = std::vector<std::string>;

// What CLI11 prints while it parses (help, its own errors), kept rather than
// shown, to be looked at.
class Captured {
 public:
  Captured()
      : m_out(std::cout.rdbuf(m_out_text.rdbuf())), m_err(std::cerr.rdbuf(m_err_text.rdbuf())) {}
  ~Captured() {
    std::cout.rdbuf(m_out);
    std::cerr.rdbuf(m_err);
  }
  Captured(const Captured&) = delete;
  Captured& operator=(const Captured&) = delete;

  std::string out() const { return m_out_text.str(); }
  std::string err() const { return m_err_text.str(); }

 private:
  std::ostringstream m_out_text;
  std::ostringstream m_err_text;
  std::streambuf* m_out;
  std::streambuf* m_err;
};

// The shapes both tools have: verbs that print several formats (scan, check),
// one that prints one (serve), a verb of verbs (contract validate), verbs that
// take words (check, validate), and the program's own -o for before the verb.
struct Tool {
  CLI::App app{"tool"};
  std::string leading_output;
  std::string scan_format = "table";
  std::string contract;
  std::vector<std::string> roots;
  bool verbose = false;
  std::string check_format = "table";
  std::vector<std::string> hosts;
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> files;
  bool print = false;
  CLI::App* scan = nullptr;
  CLI::App* check = nullptr;
  CLI::App* serve = nullptr;
  CLI::App* validate = nullptr;

  Tool() {
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("9.9.9"));
    app.add_option("-o,--output,--format", leading_output, "the output format");
    scan = app.add_subcommand("scan", "scan this host");
    add_format_option(scan, scan_format, {"table", "json", "junit"}, "output format");
    scan->add_option("--contract", contract, "the contract");
    scan->add_option("--root", roots, "a root (repeatable)");
    scan->add_flag("-v,--verbose", verbose, "more");
    check = app.add_subcommand("check", "ask agents");
    add_format_option(check, check_format, {"table", "json"}, "output format");
    check->add_option("HOST", hosts, "hosts");
    serve = app.add_subcommand("serve", "serve");
    serve->add_option("--allowed-host", allowed_hosts, "a Host name");
    auto* contract_verb = app.add_subcommand("contract", "contracts");
    contract_verb->require_subcommand(1);
    validate = contract_verb->add_subcommand("validate", "validate contracts");
    validate->add_option("FILE", files, "files")->required();
    validate->add_flag("--print", print, "print it");
  }

  CommandLine read(const Words& words) const {
    std::vector<const char*> argv = {"tool"};
    for (const auto& word : words) {
      argv.push_back(word.c_str());
    }
    return read_command_line("tool", app, static_cast<int>(argv.size()), argv.data());
  }

  // Read, then parsed by CLI11 (what it prints goes to a Captured).
  std::optional<int> parse(const Words& words) {
    const auto line = read(words);
    EXPECT_EQ(line.problem, "") << "a line CLI11 was meant to parse";
    return parse_command_line(app, line);
  }
};

Words with_program(Words words) {
  words.insert(words.begin(), "tool");
  return words;
}

TEST(CommandLineGrammar, AKnownLineReachesCli11Unchanged) {
  const Tool tool;
  const Words words = {"scan", "--contract", "c.yaml", "--root=/srv", "-v", "-o", "json"};
  const auto line = tool.read(words);
  EXPECT_EQ(line.problem, "");
  EXPECT_EQ(line.arguments, with_program(words));
}

TEST(CommandLineGrammar, AnUnknownVerbIsNamedWithTheNearestVerbAndEveryVerb) {
  const Tool tool;
  const auto line = tool.read({"sacn", "--contract", "c.yaml"});
  EXPECT_EQ(line.problem,
            "tool: unknown command 'sacn' (did you mean 'scan'?); the commands are: scan, check, "
            "serve, contract");
}

TEST(CommandLineGrammar, AnUnknownVerbFarFromEveryVerbGetsNoGuess) {
  const Tool tool;
  EXPECT_EQ(tool.read({"frobnicate"}).problem,
            "tool: unknown command 'frobnicate'; the commands are: scan, check, serve, contract");
}

TEST(CommandLineGrammar, AnUnknownVerbOfAVerbIsNamedAmongThatVerbsVerbs) {
  const Tool tool;
  EXPECT_EQ(tool.read({"contract", "valdiate", "c.yaml"}).problem,
            "tool contract: unknown command 'valdiate' (did you mean 'validate'?); the commands "
            "are: validate");
}

TEST(CommandLineGrammar, AnUnknownFlagGetsTheNearestFlagOfItsVerb) {
  const Tool tool;
  EXPECT_EQ(tool.read({"scan", "--contrat", "c.yaml"}).problem,
            "tool scan: unknown flag '--contrat' (did you mean '--contract'?)");
  // Named without the value written into it.
  EXPECT_EQ(tool.read({"scan", "--contrat=c.yaml"}).problem,
            "tool scan: unknown flag '--contrat' (did you mean '--contract'?)");
  // A long flag written with one dash is still the long flag it nearly is.
  EXPECT_EQ(tool.read({"scan", "-contract", "c.yaml"}).problem,
            "tool scan: unknown flag '-contract' (did you mean '--contract'?)");
}

TEST(CommandLineGrammar, AnUnknownFlagFarFromEveryFlagPointsAtHelp) {
  const Tool tool;
  EXPECT_EQ(tool.read({"scan", "--zzzzzzzz"}).problem,
            "tool scan: unknown flag '--zzzzzzzz'; `tool scan --help` lists its flags");
}

TEST(CommandLineGrammar, AFlagOfOtherVerbsNamesThem) {
  const Tool tool;
  EXPECT_EQ(tool.read({"scan", "--allowed-host", "x"}).problem,
            "tool scan: --allowed-host is a flag of serve, not of scan");
  EXPECT_EQ(tool.read({"--allowed-host", "x", "serve"}).problem,
            "tool: --allowed-host is a flag of serve (give it after the verb)");
  // A verb's verb is named by its path.
  EXPECT_EQ(tool.read({"scan", "--print"}).problem,
            "tool scan: --print is a flag of contract validate, not of scan");
}

TEST(CommandLineGrammar, AProgramFlagAfterTheVerbGoesBeforeIt) {
  const Tool tool;
  EXPECT_EQ(tool.read({"scan", "--version"}).problem,
            "tool scan: --version goes before the verb (tool --version ...)");
}

TEST(CommandLineGrammar, OutputBeforeTheVerbMovesAfterIt) {
  const Tool tool;
  const Words moved = {"tool", "scan", "--output", "json", "--root", "/srv"};
  for (const Words& words :
       {Words{"-o", "json", "scan", "--root", "/srv"}, Words{"-ojson", "scan", "--root", "/srv"},
        Words{"--output=json", "scan", "--root", "/srv"},
        Words{"--format", "json", "scan", "--root", "/srv"}}) {
    const auto line = tool.read(words);
    EXPECT_EQ(line.problem, "") << words[0];
    EXPECT_EQ(line.arguments, moved) << words[0];
  }
  // Right after the verb's verb, ahead of its words.
  EXPECT_EQ(tool.read({"-o", "json", "check", "h1", "h2"}).arguments,
            (Words{"tool", "check", "--output", "json", "h1", "h2"}));
}

TEST(CommandLineGrammar, OutputBeforeOrAfterTheVerbParsesTheSame) {
  for (const Words& words : {Words{"-o", "json", "scan"}, Words{"scan", "-o", "json"},
                             Words{"scan", "--format=json"}, Words{"scan", "-ojson"}}) {
    Tool tool;
    Captured captured;
    EXPECT_EQ(tool.parse(words), std::nullopt) << words[0] << captured.err();
    EXPECT_EQ(tool.scan_format, "json") << words[0];
    EXPECT_EQ(tool.leading_output, "") << "the verb's own -o reads it";
  }
}

TEST(CommandLineGrammar, TheSameOutputOnBothSidesIsGivenOnce) {
  const Tool tool;
  const auto line = tool.read({"-o", "json", "scan", "--output=json"});
  EXPECT_EQ(line.problem, "");
  EXPECT_EQ(line.arguments, (Words{"tool", "scan", "--output=json"}));
}

TEST(CommandLineGrammar, TwoDifferentOutputsAreAProblem) {
  const Tool tool;
  EXPECT_EQ(tool.read({"-o", "json", "scan", "-o", "table"}).problem,
            "tool scan: -o json before the verb and -o table after it: give one");
  EXPECT_EQ(tool.read({"--format", "json", "check", "-otable", "h1"}).problem,
            "tool check: -o json before the verb and -o table after it: give one");
}

TEST(CommandLineGrammar, OutputForAVerbThatPrintsOneFormatIsAProblem) {
  const Tool tool;
  const std::string problem =
      "tool serve: -o (the output format) is for scan, check; serve prints one format";
  EXPECT_EQ(tool.read({"-o", "json", "serve"}).problem, problem);
  EXPECT_EQ(tool.read({"serve", "-o", "json"}).problem, problem);
  EXPECT_EQ(tool.read({"serve", "--format=json"}).problem, problem);
  EXPECT_EQ(tool.read({"-o", "json", "contract", "validate", "c.yaml"}).problem,
            "tool contract validate: -o (the output format) is for scan, check; validate prints "
            "one format");
}

// -o before the verb means what it means after it, where CLI11 refuses two
// (`scan -o json -o table`): two different ones before it are a problem too,
// never the first dropped without a word.
TEST(CommandLineGrammar, TwoDifferentOutputsBeforeTheVerbAreAProblemAsAfterIt) {
  {
    Tool tool;
    Captured captured;
    EXPECT_EQ(parse_command_line(tool.app, tool.read({"scan", "-o", "json", "-o", "table"})), 2)
        << "after the verb: refused";
  }
  const Tool tool;
  const auto line = tool.read({"-o", "json", "-o", "table", "scan"});
  EXPECT_NE(line.problem, "") << "before the verb: json dropped, the verb prints table";
}

// "-ojson" is -o with its value written in: after a verb without -o it is
// told, as `serve -o json` is, which verbs take -o, not named an unknown flag
// '-ojson'.
TEST(CommandLineGrammar, AnOutputWrittenIntoItsFlagIsToldWhichVerbsTakeIt) {
  const Tool tool;
  EXPECT_EQ(tool.read({"serve", "-ojson"}).problem, tool.read({"serve", "-o", "json"}).problem);
}

TEST(CommandLineGrammar, OutputWithoutAVerbStaysTheProgramsOwn) {
  const Tool tool;
  const auto line = tool.read({"-o", "json"});
  EXPECT_EQ(line.problem, "");
  EXPECT_EQ(line.arguments, (Words{"tool", "--output", "json"}));
}

TEST(CommandLineGrammar, AFormatAVerbDoesNotPrintIsRefusedWithItsFormats) {
  Tool tool;
  Captured captured;
  EXPECT_EQ(tool.parse({"scan", "-o", "yaml"}), 2);
  EXPECT_NE(captured.err().find("-o yaml is not a format it prints; it prints table, json, junit"),
            std::string::npos)
      << captured.err();
  // Before the verb it is the verb's -o that refuses it, with the verb's formats.
  Tool other;
  Captured again;
  EXPECT_EQ(other.parse({"-o", "junit", "check", "h1"}), 2);
  EXPECT_NE(again.err().find("-o junit is not a format it prints; it prints table, json"),
            std::string::npos)
      << again.err();
}

TEST(CommandLineGrammar, AVerbsFormatDefaultsToWhatItWasGiven) {
  Tool tool;
  Captured captured;
  EXPECT_EQ(tool.parse({"scan"}), std::nullopt) << captured.err();
  EXPECT_EQ(tool.scan_format, "table");
}

TEST(CommandLineGrammar, AValueWrittenIntoItsFlagOrAfterItIsTheSame) {
  for (const Words& words :
       {Words{"scan", "--contract=c.yaml", "--root=/a", "--root=/b"},
        Words{"scan", "--contract", "c.yaml", "--root", "/a", "--root", "/b"}}) {
    Tool tool;
    Captured captured;
    EXPECT_EQ(tool.parse(words), std::nullopt) << words[1] << captured.err();
    EXPECT_EQ(tool.contract, "c.yaml") << words[1];
    EXPECT_EQ(tool.roots, (Words{"/a", "/b"})) << words[1];
  }
}

// The word after a flag that takes a value is that value, whatever it looks
// like: a verb's name, an equals sign, a number below zero, stdin.
TEST(CommandLineGrammar, TheWordAfterAFlagThatTakesAValueIsItsValue) {
  for (const std::string value : {"serve", "a=b", "-1", "-"}) {
    Tool tool;
    Captured captured;
    const auto line = tool.read({"scan", "--contract", value});
    EXPECT_EQ(line.problem, "") << value;
    EXPECT_EQ(parse_command_line(tool.app, line), std::nullopt) << value << captured.err();
    EXPECT_EQ(tool.contract, value);
    EXPECT_FALSE(tool.serve->parsed()) << value;
  }
}

TEST(CommandLineGrammar, NumbersBelowZeroAndStdinAreWordsNotFlags) {
  Tool tool;
  Captured captured;
  EXPECT_EQ(tool.parse({"check", "-1", "-0.5", "-"}), std::nullopt) << captured.err();
  EXPECT_EQ(tool.hosts, (Words{"-1", "-0.5", "-"}));
}

TEST(CommandLineGrammar, AWordThatNamesAnotherVerbIsAWordOfAVerbThatTakesWords) {
  Tool tool;
  Captured captured;
  const auto line = tool.read({"check", "scan", "serve"});
  EXPECT_EQ(line.problem, "");
  EXPECT_EQ(line.arguments, (Words{"tool", "check", "scan", "serve"}));
  EXPECT_EQ(parse_command_line(tool.app, line), std::nullopt) << captured.err();
  EXPECT_EQ(tool.hosts, (Words{"scan", "serve"})) << "CLI11 reads them as words too";
  EXPECT_FALSE(tool.scan->parsed());
}

TEST(CommandLineGrammar, EverythingAfterADoubleDashIsAWord) {
  Tool tool;
  Captured captured;
  const auto line = tool.read({"check", "--", "--contrat", "-o", "sacn"});
  EXPECT_EQ(line.problem, "") << "nothing after -- is read as a flag or a verb";
  EXPECT_EQ(line.arguments, (Words{"tool", "check", "--", "--contrat", "-o", "sacn"}));
  EXPECT_EQ(parse_command_line(tool.app, line), std::nullopt) << captured.err();
  EXPECT_EQ(tool.hosts, (Words{"--contrat", "-o", "sacn"}));
  EXPECT_EQ(tool.check_format, "table") << "-o after -- is a word";
}

TEST(CommandLineGrammar, OutputBeforeTheVerbStaysAheadOfADoubleDash) {
  Tool tool;
  Captured captured;
  const auto line = tool.read({"-o", "json", "check", "--", "-o"});
  EXPECT_EQ(line.problem, "");
  EXPECT_EQ(line.arguments, (Words{"tool", "check", "--output", "json", "--", "-o"}));
  EXPECT_EQ(parse_command_line(tool.app, line), std::nullopt) << captured.err();
  EXPECT_EQ(tool.check_format, "json");
  EXPECT_EQ(tool.hosts, Words{"-o"});
}

TEST(CommandLineGrammar, AnEmptyWordIsAWordOrAnUnknownVerb) {
  Tool tool;
  EXPECT_EQ(tool.read({""}).problem,
            "tool: unknown command ''; the commands are: scan, check, serve, contract")
      << "nothing typed is close to every verb, so no verb is suggested";
  Captured captured;
  EXPECT_EQ(tool.parse({"check", "", "h1"}), std::nullopt) << captured.err();
  EXPECT_EQ(tool.hosts, (Words{"", "h1"}));
  Tool other;
  EXPECT_EQ(other.parse({"scan", "--contract", ""}), std::nullopt) << captured.err();
  EXPECT_EQ(other.contract, "");
  EXPECT_EQ(other.scan->get_option("--contract")->count(), 1U) << "given, though empty";
}

// A megabyte word is read in a blink and named, never compared letter by
// letter with every verb and flag.
TEST(CommandLineGrammar, AHugeWordIsReadQuicklyAndKeptWhole) {
  const Tool tool;
  const std::string huge(1 << 20, 's');
  const auto start = std::chrono::steady_clock::now();
  const auto verb = tool.read({huge});
  const auto flag = tool.read({"scan", "--" + huge});
  const auto value = tool.read({"scan", "--contract", huge});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(2));
  EXPECT_EQ(verb.problem,
            "tool: unknown command '" + huge + "'; the commands are: scan, check, serve, contract");
  EXPECT_EQ(flag.problem,
            "tool scan: unknown flag '--" + huge + "'; `tool scan --help` lists its flags");
  EXPECT_EQ(value.problem, "");
  EXPECT_EQ(value.arguments, (Words{"tool", "scan", "--contract", huge}));
}

TEST(CommandLineGrammar, AFlagMissingItsValueIsLeftForCli11ToRefuse) {
  Tool tool;
  Captured captured;
  const auto line = tool.read({"scan", "--contract"});
  EXPECT_EQ(line.problem, "");
  EXPECT_EQ(line.arguments, (Words{"tool", "scan", "--contract"}));
  EXPECT_EQ(parse_command_line(tool.app, line), 2);
  EXPECT_FALSE(captured.err().empty());
}

TEST(CommandLineGrammar, HelpAndVersionEndTheParseWithStatusZero) {
  {
    Tool tool;
    Captured captured;
    EXPECT_EQ(tool.parse({"--version"}), 0);
    EXPECT_NE(captured.out().find("9.9.9"), std::string::npos) << captured.out();
  }
  {
    Tool tool;
    Captured captured;
    EXPECT_EQ(tool.parse({"scan", "--help"}), 0);
    EXPECT_NE(captured.out().find("--contract"), std::string::npos) << captured.out();
  }
}

TEST(CommandLineGrammar, NoVerbIsAnErrorOfStatusTwo) {
  Tool tool;
  Captured captured;
  EXPECT_EQ(tool.parse({}), 2);
}

TEST(CommandLineGrammar, NoArgumentsAtAllAreNoLine) {
  const Tool tool;
  const auto line = read_command_line("tool", tool.app, 0, nullptr);
  EXPECT_EQ(line.problem, "");
  EXPECT_TRUE(line.arguments.empty());
}

}  // namespace
}  // namespace envcontract::command_line
