#pragma once

#include <string>
#include <vector>

#include "contracts/judgement.hpp"

namespace envcontract::contracts {

// One target of the contract (the image the host must run) judged against
// the host's image reference.
struct TargetJudgement {
  std::string name;
  std::string image;
  CheckResult check;  // id "image"
};

struct NamedEnvJudgement {
  std::string name;
  EnvJudgement judgement;
};

// The host as a whole: its targets, every env, and the verdict by the
// contract's `envs` rule.
struct HostJudgement {
  EnvVerdict verdict = EnvVerdict::error;
  std::vector<std::string> compliant_envs;
  std::vector<std::string> reasons;  // why the host is not compliant, one line each
  std::vector<TargetJudgement> targets;
  std::vector<NamedEnvJudgement> envs;
};

// Judges the host's facts (each env with its dynamic facts when they ran).
// The host complies when its image matches one of the
// contract's targets (when it has any) and its envs satisfy the `envs` rule:
// at least one compliant env (any), every env (all), or the named ones.
HostJudgement judge_host(const Contract& contract, const facts::HostFacts& host_facts);

// Judges the image reference the host runs against each target.
std::vector<TargetJudgement> judge_targets(const Contract& contract,
                                           const facts::ImageTag& image_facts);

}  // namespace envcontract::contracts
