#include "command_line/command_line.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <optional>

#include "common/spelling.hpp"

namespace envcontract::command_line {
namespace {

std::string joined(const std::vector<std::string>& words, const char* separator) {
  std::string text;
  for (const auto& word : words) {
    text += (text.empty() ? "" : separator) + word;
  }
  return text;
}

std::vector<const CLI::App*> verbs_of(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

const CLI::App* verb_named(const CLI::App& app, const std::string& name) {
  for (const auto* verb : verbs_of(app)) {
    if (verb->get_name() == name) {
      return verb;
    }
  }
  return nullptr;
}

// Every spelling of every flag of `app`: "--contract", "-o".
std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) {
      names.push_back("--" + name);
    }
    for (const auto& name : option->get_snames()) {
      names.push_back("-" + name);
    }
  }
  return names;
}

// "-1" and "-0.5" are values, "-" is stdin: neither is a flag.
bool looks_like_flag(const std::string& argument) {
  if (argument.size() < 2 || argument[0] != '-') {
    return false;
  }
  const char next = argument[1] == '-' && argument.size() > 2 ? argument[2] : argument[1];
  return std::isdigit(static_cast<unsigned char>(next)) == 0 && next != '.';
}

// The flag an argument names, among the flags of the verb it follows (a
// flag of the program goes before the verb), and the value written into it
// ("--root=/x", "-ojson"), if any.
struct NamedFlag {
  const CLI::Option* option = nullptr;
  std::string name;
  std::optional<std::string> value;
};

NamedFlag find_flag(const std::vector<const CLI::App*>& chain, const std::string& argument) {
  NamedFlag flag;
  const auto equals = argument.find('=');
  if (argument.starts_with("--")) {
    flag.name = argument.substr(0, equals);
    if (equals != std::string::npos) {
      flag.value = argument.substr(equals + 1);
    }
  } else {
    flag.name = argument.substr(0, 2);
    if (argument.size() > 2) {
      flag.value = argument.substr(2);
    }
  }
  flag.option = chain.back()->get_option_no_throw(flag.name);
  // "-contract": a long flag with one dash; but "-ojson" is the program's
  // -o with its value written in, said as -o is wherever it is given.
  if (flag.option == nullptr && !argument.starts_with("--") &&
      chain.front()->get_option_no_throw(flag.name) == nullptr) {
    flag.name = argument.substr(0, equals);
  }
  return flag;
}

bool takes_value(const CLI::Option& option) {
  return option.get_items_expected_max() > 0;
}

std::string command_of(std::string_view program, const std::vector<const CLI::App*>& chain) {
  std::string command(program);
  for (std::size_t i = 1; i < chain.size(); ++i) {
    command += " " + chain[i]->get_name();
  }
  return command;
}

// The verbs that print in more than one format, for a -o they do not take.
std::vector<std::string> verbs_with_formats(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* verb : verbs_of(app)) {
    if (verb->get_option_no_throw("--output") != nullptr) {
      names.push_back(verb->get_name());
    }
  }
  return names;
}

// -o given to a verb without formats: which verbs take it.
std::string output_not_taken(std::string_view program, const std::vector<const CLI::App*>& chain) {
  return command_of(program, chain) + ": -o (the output format) is for " +
         joined(verbs_with_formats(*chain.front()), ", ") + "; " + chain.back()->get_name() +
         " prints one format";
}

// The verbs (and verbs' verbs) under `app` that take the flag `name`.
void verbs_taking(const CLI::App& app, const std::string& prefix, const std::string& name,
                  std::vector<std::string>& found) {
  for (const auto* verb : verbs_of(app)) {
    const std::string path = prefix + verb->get_name();
    if (verb->get_option_no_throw(name) != nullptr) {
      found.push_back(path);
    }
    verbs_taking(*verb, path + " ", name, found);
  }
}

std::string unknown_flag(std::string_view program, const std::vector<const CLI::App*>& chain,
                         const std::string& name) {
  const std::string command = command_of(program, chain);
  if (chain.size() > 1 && chain.front()->get_option_no_throw(name) != nullptr) {
    if (name == "-o" || name == "--output" || name == "--format") {
      return output_not_taken(program, chain);
    }
    return command + ": " + name + " goes before the verb (" + std::string(program) + " " + name +
           " ...)";
  }
  // A flag of other verbs: where it goes, rather than a near miss.
  std::vector<std::string> takers;
  verbs_taking(*chain.front(), "", name, takers);
  if (!takers.empty()) {
    return command + ": " + name + " is a flag of " + joined(takers, ", ") +
           (chain.size() == 1 ? " (give it after the verb)"
                              : ", not of " + chain.back()->get_name());
  }
  std::string said = command + ": unknown flag '" + name + "'";
  const auto near = common::closest_match(name, flag_names(*chain.back()));
  if (near) {
    return said + " (did you mean '" + *near + "'?)";
  }
  return said + "; `" + command + " --help` lists its flags";
}

std::string unknown_command(std::string_view program, const std::vector<const CLI::App*>& chain,
                            const std::string& word) {
  std::vector<std::string> names;
  for (const auto* verb : verbs_of(*chain.back())) {
    names.push_back(verb->get_name());
  }
  return command_of(program, chain) + ": unknown command '" + word + "'" +
         common::did_you_mean(word, names) + "; the commands are: " + joined(names, ", ");
}

}  // namespace

CommandLine read_command_line(std::string_view program, const CLI::App& app, int argc,
                              const char* const* argv) {
  CommandLine line;
  if (argc < 1) {
    return line;
  }
  line.arguments.emplace_back(argv[0]);
  std::vector<const CLI::App*> chain = {&app};
  std::optional<std::string> leading_output;  // -o before the verb
  std::optional<std::string> verb_output;     // -o after it
  std::size_t verb_end = 1;                   // where a leading -o goes
  const CLI::Option* app_output = app.get_option_no_throw("--output");
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--") {
      line.arguments.insert(line.arguments.end(), argv + i, argv + argc);
      break;
    }
    if (looks_like_flag(argument)) {
      auto flag = find_flag(chain, argument);
      if (flag.option == nullptr) {
        line.problem = unknown_flag(program, chain, flag.name);
        return line;
      }
      const bool separate = takes_value(*flag.option) && !flag.value && i + 1 < argc;
      if (separate) {
        flag.value = argv[++i];
      }
      if (flag.option == app_output && chain.size() == 1) {
        // After the verb two -o are refused (CLI11): before it, too, or
        // the first would be dropped without a word.
        if (leading_output && flag.value && *leading_output != *flag.value) {
          line.problem =
              "-o " + *leading_output + " and -o " + *flag.value + " before the verb: give one";
          return line;
        }
        leading_output = flag.value;
        continue;
      }
      if (flag.option->check_name("--output") && flag.value) {
        verb_output = flag.value;
      }
      line.arguments.push_back(argument);
      if (separate) {
        line.arguments.push_back(*flag.value);
      }
      continue;
    }
    const auto* current = chain.back();
    if (const auto* verb = verb_named(*current, argument)) {
      chain.push_back(verb);
      line.arguments.push_back(argument);
      verb_end = line.arguments.size();
      continue;
    }
    const bool takes_words =
        !current->get_options([](const CLI::Option* option) { return option->get_positional(); })
             .empty();
    if (!verbs_of(*current).empty() && !takes_words) {
      line.problem = unknown_command(program, chain, argument);
      return line;
    }
    line.arguments.push_back(argument);
  }
  if (leading_output && chain.size() > 1) {
    const auto* verb = chain.back();
    if (verb->get_option_no_throw("--output") == nullptr) {
      line.problem = output_not_taken(program, chain);
    } else if (verb_output && *verb_output != *leading_output) {
      line.problem = command_of(program, chain) + ": -o " + *leading_output +
                     " before the verb and -o " + *verb_output + " after it: give one";
    } else if (!verb_output) {
      line.arguments.insert(line.arguments.begin() + static_cast<std::ptrdiff_t>(verb_end),
                            {"--output", *leading_output});
    }
  } else if (leading_output) {
    line.arguments.insert(line.arguments.begin() + 1, {"--output", *leading_output});
  }
  return line;
}

CLI::Option* add_format_option(CLI::App* verb, std::string& format,
                               const std::vector<std::string>& formats, const std::string& help) {
  const std::string listing = joined(formats, ", ");
  CLI::Validator one_of(
      [formats, listing](std::string& value) -> std::string {
        if (std::find(formats.begin(), formats.end(), value) != formats.end()) {
          return "";
        }
        return "-o " + value + " is not a format it prints; it prints " + listing;
      },
      "{" + joined(formats, ",") + "}");
  return verb->add_option("-o,--output,--format", format, help)
      ->check(one_of)
      ->capture_default_str();
}

std::optional<int> parse_command_line(CLI::App& app, const CommandLine& line) {
  std::vector<const char*> argv;
  argv.reserve(line.arguments.size());
  for (const auto& argument : line.arguments) {
    argv.push_back(argument.c_str());
  }
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace envcontract::command_line
