#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "probes/linkage_facts.hpp"

namespace envcontract::probes {

// "libtorch_fl.so must not NEED libtorch_cuda.so", as a contract's linkage
// check states it once its {site}/{prefix} anchors are expanded.
struct LinkageRule {
  std::string library_glob;  // absolute path pattern, fnmatch(3) with FNM_PATHNAME
  std::vector<std::string> must_not_need;
  std::vector<std::string> must_need;
  bool transitive = true;  // through the closure, or DT_NEEDED of the library only
};

struct LinkageViolation {
  std::filesystem::path library;
  std::string summary;  // "libtorch.so needs libtorch_cuda.so (libtorch.so -> libtorch_cuda.so)"
  std::vector<std::string> chain;  // empty for a must_need violation
};

struct LinkageVerdict {
  std::vector<std::filesystem::path> matched;  // libraries the glob selected
  std::vector<LinkageViolation> violations;
};

// Judges `rule` against the env's linkage facts. No library matching the
// glob is not a violation here: a `files` check says whether it must exist.
LinkageVerdict check_linkage_rule(const LinkageFacts& facts, const LinkageRule& rule);

}  // namespace envcontract::probes
