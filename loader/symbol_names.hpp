#pragma once

#include <optional>
#include <string>
#include <vector>

// Reading demangled C++ function names apart: scope, name, template
// arguments, parameters, qualifiers and ABI tags, so that two symbols can be
// compared part by part ("the 4th parameter differs", "the class moved").
namespace envcontract::loader {

// __cxa_demangle, or the name itself when it is not a mangled C++ name.
std::string demangle(const std::string& mangled);

// "int ns::Box<long>::get<int>[abi:cxx11](char const*) const &" in parts.
struct Signature {
  std::string qualified_name;  // "ns::Box<long>::get<int>": scope, name and template arguments
  std::string scope;           // "ns::Box<long>"; "" for a global function
  std::string name;            // "get", "operator+", "Box" (a constructor), "~Box"
  std::string template_args;   // "<int>" of a function template instance, else ""
  std::string return_type;     // "int" (demangled names carry it for template instances only)
  std::vector<std::string> abi_tags;  // "cxx11" from [abi:cxx11]
  std::vector<std::string> parameters;
  std::string qualifiers;  // trailing " const", " &", ...
};

// nullopt when `demangled` is not a function signature (a variable, a C name).
std::optional<Signature> parse_signature(const std::string& demangled);

// How `defined` differs from `wanted` parameter by parameter, and in its
// qualifiers, each with the library defining it.
std::vector<std::string> signature_differences(const Signature& wanted, const Signature& defined,
                                               const std::string& defining_library);

}  // namespace envcontract::loader
