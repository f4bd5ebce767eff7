// Near misses for every kind of symbol: a plugin is built by g++ against one
// declaration, the runtime it loads defines another; the real loader must
// refuse the plugin, and the report must name what the plugin wanted, what
// the runtime has instead, and the part that differs, most likely first.
#include <gtest/gtest.h>

#include <algorithm>

#include "loader/ld_cache.hpp"
#include "loader/library_resolver.hpp"
#include "loader/symbol_resolution.hpp"
#include "tests/support/compile.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::loader {
namespace {

namespace fs = std::filesystem;

class NearMisses : public ::testing::Test {
 protected:
  // Builds libruntime.so from `runtime` and libplugin.so from `plugin`
  // (linked against it), checks that the real loader refuses the plugin
  // for `wanted` (demangled), and returns that symbol's report.
  UnresolvedSymbol unresolved(const std::string& runtime, const std::string& plugin,
                              const std::string& wanted,
                              const std::vector<std::string>& runtime_flags = {},
                              const std::vector<std::string>& plugin_flags = {}) {
    std::vector<std::string> flags = {"-Wl,-soname,libruntime.so"};
    flags.insert(flags.end(), runtime_flags.begin(), runtime_flags.end());
    testing::build_cxx_shared_library(m_dir.path() / "libruntime.so", runtime, flags);
    flags = {"-L" + m_dir.path().string(), "-lruntime", "-Wl,-rpath,$ORIGIN"};
    flags.insert(flags.end(), plugin_flags.begin(), plugin_flags.end());
    testing::build_cxx_shared_library(m_dir.path() / "libplugin.so", plugin, flags);
    return find(wanted);
  }

  UnresolvedSymbol find(const std::string& wanted) {
    const auto plugin = m_dir.path() / "libplugin.so";
    const auto loader = testing::run_command({DLOPEN_CHECK_PATH, plugin.string()});
    EXPECT_FALSE(loader.out.starts_with("ok")) << "the loader should refuse the plugin";
    SearchEnvironment search;
    search.cache = m_cache;
    const auto closure = resolve_closure(plugin, DLOPEN_CHECK_PATH, search, m_elf_files);
    const auto report = resolve_symbols(closure);
    for (const auto& symbol : report.unresolved) {
      if (symbol.demangled == wanted) {
        return symbol;
      }
    }
    ADD_FAILURE() << "no unresolved " << wanted << " among " << report.unresolved.size();
    return {};
  }

  static void expect_first(const UnresolvedSymbol& symbol, const std::string& kind,
                           const std::string& demangled, const std::string& difference) {
    ASSERT_FALSE(symbol.near_misses.empty()) << symbol.demangled;
    const auto& miss = symbol.near_misses.front();
    EXPECT_EQ(miss.kind, kind) << miss.demangled;
    EXPECT_EQ(miss.demangled, demangled);
    EXPECT_EQ(miss.library.filename(), "libruntime.so");
    ASSERT_FALSE(miss.differences.empty());
    EXPECT_TRUE(std::any_of(miss.differences.begin(), miss.differences.end(),
                            [&](const std::string& text) { return text == difference; }))
        << "differences: " << ::testing::PrintToString(miss.differences);
  }

  testing::TempDir m_dir;
  std::shared_ptr<const LdCache> m_cache = std::make_shared<LdCache>(LdCache::load());
  ElfCache m_elf_files;
};

// Each kind of C++ symbol: what the plugin wants, what the runtime defines
// instead, and the difference the report must name.
struct Case {
  const char* name;
  const char* runtime;
  const char* plugin;
  const char* wanted;
  const char* kind;
  const char* defined;
  const char* difference;
};

const Case k_cases[] = {
    {"FreeFunctionWithAnotherParameterType", "namespace ns { void f(unsigned int) {} }",
     "namespace ns { void f(int); }\nvoid use() { ns::f(1); }", "ns::f(int)", "parameters",
     "ns::f(unsigned int)",
     "1st parameter: int (wanted) vs unsigned int (defined in libruntime.so)"},
    {"MemberFunctionOfTheIssue",
     "namespace ns { struct Stream { void sync(unsigned long); };\n"
     "void Stream::sync(unsigned long) {} }",
     "namespace ns { struct Stream { void sync(long); }; }\n"
     "void use(ns::Stream& s) { s.sync(1); }",
     "ns::Stream::sync(long)", "parameters", "ns::Stream::sync(unsigned long)",
     "1st parameter: long (wanted) vs unsigned long (defined in libruntime.so)"},
    {"ConstQualifiedMethod", "struct S { int get(); };\nint S::get() { return 1; }",
     "struct S { int get() const; };\nint use(const S& s) { return s.get(); }", "S::get() const",
     "qualifiers", "S::get()", "qualifiers: ' const' (wanted) vs '' (defined in libruntime.so)"},
    {"RefQualifiedMethod", "struct S { int get() &; };\nint S::get() & { return 1; }",
     "struct S { int get() &&; };\nint use() { return S().get(); }", "S::get() &&", "qualifiers",
     "S::get() &", "qualifiers: ' &&' (wanted) vs ' &' (defined in libruntime.so)"},
    {"ConstructorWithAnotherParameterType",
     "namespace ns { struct Box { Box(long); long v; }; Box::Box(long x) : v(x) {} }",
     "namespace ns { struct Box { Box(int); long v; }; }\nlong use() { return ns::Box(1).v; }",
     "ns::Box::Box(int)", "parameters", "ns::Box::Box(long)",
     "1st parameter: int (wanted) vs long (defined in libruntime.so)"},
    {"DestructorOfAClassThatMovedNamespace",
     "namespace next { struct Handle { ~Handle(); }; Handle::~Handle() {} }",
     "namespace prev { struct Handle { ~Handle(); }; }\nvoid use() { prev::Handle h; }",
     "prev::Handle::~Handle()", "scope", "next::Handle::~Handle()",
     "scope: prev::Handle (wanted) vs next::Handle (defined in libruntime.so)"},
    {"FunctionTemplateInstantiatedForAnotherType",
     "template <typename T> T convert(T v) { return v; }\n"
     "template long convert<long>(long);",
     "template <typename T> T convert(T v);\n"
     "extern template int convert<int>(int);\nint use() { return convert<int>(1); }",
     "int convert<int>(int)", "template_arguments", "long convert<long>(long)",
     "template arguments: <int> (wanted) vs <long> (defined in libruntime.so)"},
    {"MemberOfAClassTemplate",
     "template <typename T> struct Cell { T get() const; T v; };\n"
     "template <typename T> T Cell<T>::get() const { return v; }\n"
     "template struct Cell<long>;",
     "template <typename T> struct Cell { T get() const; T v; };\n"
     "extern template struct Cell<int>;\nint use(const Cell<int>& c) { return c.get(); }",
     "Cell<int>::get() const", "template_arguments", "Cell<long>::get() const",
     "class template arguments: Cell<int> (wanted) vs Cell<long> (defined in "
     "libruntime.so)"},
    {"OperatorWithAnotherParameterType",
     "namespace ns { struct Vec { Vec operator+(long) const; long v; };\n"
     "Vec Vec::operator+(long x) const { return Vec{v + x}; } }",
     "namespace ns { struct Vec { Vec operator+(int) const; long v; }; }\n"
     "long use(const ns::Vec& a) { return (a + 1).v; }",
     "ns::Vec::operator+(int) const", "parameters", "ns::Vec::operator+(long) const",
     "1st parameter: int (wanted) vs long (defined in libruntime.so)"},
    {"FunctionInAnotherAbiVersionNamespace",
     "namespace lib { inline namespace v2 { void go(int) {} } }",
     "namespace lib { inline namespace v1 { void go(int); } }\n"
     "void use() { lib::go(1); }",
     "lib::v1::go(int)", "scope", "lib::v2::go(int)",
     "scope: lib::v1 (wanted) vs lib::v2 (defined in libruntime.so)"},
};

class EveryKindOfSymbol : public NearMisses, public ::testing::WithParamInterface<Case> {};

TEST_P(EveryKindOfSymbol, NearMissNamesTheDifference) {
  const Case& c = GetParam();
  expect_first(unresolved(c.runtime, c.plugin, c.wanted), c.kind, c.defined, c.difference);
}

INSTANTIATE_TEST_SUITE_P(NearMisses, EveryKindOfSymbol, ::testing::ValuesIn(k_cases),
                         [](const auto& test) { return std::string(test.param.name); });

TEST_F(NearMisses, AnotherClassesFunctionOfTheSameNameIsNotOne) {
  // PyTorch's at::_ops::X::redispatch: hundreds of them, none a near miss of another.
  const auto symbol = unresolved(
      "namespace ops { struct tril_ { static void redispatch(int); };\n"
      "void tril_::redispatch(int) {} }",
      "namespace ops { struct triu_ { static void redispatch(int); }; }\n"
      "void use() { ops::triu_::redispatch(1); }",
      "ops::triu_::redispatch(int)");
  EXPECT_TRUE(symbol.near_misses.empty()) << symbol.near_misses.front().demangled;
}

TEST_F(NearMisses, CSymbolThatExistsOnlyUnderAnotherVersion) {
  // The plugin is built against a runtime that had cfunc at RT_1; the
  // runtime it meets moved cfunc to RT_2 (RT_1 still exists).
  const auto old_script = m_dir.write("old.map", "RT_1 { global: cfunc; other; local: *; };\n");
  testing::build_cxx_shared_library(
      m_dir.path() / "libruntime.so",
      "extern \"C\" int cfunc(void) { return 1; }\nextern \"C\" int other(void) { return 2; }",
      {"-Wl,-soname,libruntime.so", "-Wl,--version-script=" + old_script.string()});
  testing::build_cxx_shared_library(
      m_dir.path() / "libplugin.so", "extern \"C\" int cfunc(void);\nint use() { return cfunc(); }",
      {"-L" + m_dir.path().string(), "-lruntime", "-Wl,-rpath,$ORIGIN"});
  const auto new_script =
      m_dir.write("new.map", "RT_1 { global: other; local: *; };\nRT_2 { global: cfunc; } RT_1;\n");
  testing::build_cxx_shared_library(
      m_dir.path() / "libruntime.so",
      "extern \"C\" int cfunc(void) { return 1; }\nextern \"C\" int other(void) { return 2; }",
      {"-Wl,-soname,libruntime.so", "-Wl,--version-script=" + new_script.string()});
  const auto symbol = find("cfunc");
  EXPECT_EQ(symbol.version, "RT_1");
  expect_first(symbol, "version", "cfunc",
               "version: RT_1 (wanted) vs RT_2 (defined in libruntime.so)");
}

TEST_F(NearMisses, RankedByLikelihood) {
  const auto symbol = unresolved(
      "namespace ns { void f(int, long) {} void f(long, long) {} void f(int) {} }",
      "namespace ns { void f(int, int); }\nvoid use() { ns::f(1, 2); }", "ns::f(int, int)");
  ASSERT_EQ(symbol.near_misses.size(), 3U);
  EXPECT_EQ(symbol.near_misses[0].demangled, "ns::f(int, long)");
  EXPECT_EQ(symbol.near_misses[1].demangled, "ns::f(long, long)");
  EXPECT_EQ(symbol.near_misses[2].demangled, "ns::f(int)");
  EXPECT_EQ(symbol.near_misses[2].kind, "arity");
  EXPECT_GT(symbol.near_misses[0].likelihood, symbol.near_misses[1].likelihood);
  EXPECT_GT(symbol.near_misses[1].likelihood, symbol.near_misses[2].likelihood);
}

TEST_F(NearMisses, StringsOfTheOtherLibstdcxxAbi) {
  const auto symbol = unresolved("#include <string>\nvoid take(const std::string&) {}",
                                 "#include <string>\nvoid take(const std::string&);\n"
                                 "void use() { take(std::string()); }",
                                 "take(std::string const&)", {"-D_GLIBCXX_USE_CXX11_ABI=1"},
                                 {"-D_GLIBCXX_USE_CXX11_ABI=0"});
  ASSERT_FALSE(symbol.near_misses.empty());
  const auto& differences = symbol.near_misses.front().differences;
  EXPECT_EQ(differences.back(),
            "std::__cxx11 on one side only: the two were built with different "
            "_GLIBCXX_USE_CXX11_ABI settings");
}

TEST_F(NearMisses, AbiTagOfAFunctionReturningAString) {
  const auto symbol =
      unresolved("#include <string>\nstd::string name() { return \"x\"; }",
                 "#include <string>\nstd::string name();\n"
                 "unsigned long use() { return name().size(); }",
                 "name()", {"-D_GLIBCXX_USE_CXX11_ABI=1"}, {"-D_GLIBCXX_USE_CXX11_ABI=0"});
  expect_first(symbol, "abi_tag", "name[abi:cxx11]()",
               "ABI tags: none (wanted) vs [abi:cxx11] (defined in libruntime.so)");
}

TEST(SymbolNames, PartsOfDemangledNames) {
  const auto templated = parse_signature(
      "std::pair<int, int> ns::Box<long>::make<int>[abi:cxx11](char const*) const &");
  ASSERT_TRUE(templated.has_value());
  EXPECT_EQ(templated->return_type, "std::pair<int, int>");
  EXPECT_EQ(templated->scope, "ns::Box<long>");
  EXPECT_EQ(templated->name, "make");
  EXPECT_EQ(templated->template_args, "<int>");
  EXPECT_EQ(templated->abi_tags, std::vector<std::string>{"cxx11"});
  EXPECT_EQ(templated->qualifiers, " const &");
  EXPECT_EQ(templated->qualified_name, "ns::Box<long>::make<int>");
  const auto less =
      parse_signature("bool ns::operator< <int>(ns::V<int> const&, ns::V<int> const&)");
  ASSERT_TRUE(less.has_value());
  EXPECT_EQ(less->name, "operator<");
  EXPECT_EQ(less->template_args, "<int>");
  EXPECT_EQ(less->scope, "ns");
  EXPECT_EQ(less->parameters.size(), 2U);
  const auto call = parse_signature("ns::F::operator()(int) const");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->name, "operator()");
  EXPECT_EQ(call->parameters, std::vector<std::string>{"int"});
  const auto conversion = parse_signature("ns::F::operator unsigned long() const");
  ASSERT_TRUE(conversion.has_value());
  EXPECT_EQ(conversion->name, "operator unsigned long");
  EXPECT_EQ(conversion->scope, "ns::F");
  const auto anonymous = parse_signature("(anonymous namespace)::helper(int) [clone .cold]");
  ASSERT_TRUE(anonymous.has_value());
  EXPECT_EQ(anonymous->scope, "(anonymous namespace)");
  EXPECT_EQ(anonymous->name, "helper");
}

}  // namespace
}  // namespace envcontract::loader
