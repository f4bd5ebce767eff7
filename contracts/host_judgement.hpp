#pragma once

#include <chrono>
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

// A container target's image, judged as the host's is (its envs are judged
// with the host's, each naming its container).
struct ContainerJudgement {
  std::string name;
  std::vector<TargetJudgement> targets;  // empty when it could not be scanned
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
  std::vector<ContainerJudgement> containers;
  std::vector<NamedEnvJudgement> envs;
};

// Judges the host's facts (each env with its dynamic facts when they ran).
// The host complies when its image matches one of the
// contract's targets (when it has any) and its envs satisfy the `envs` rule:
// at least one compliant env (any), every env (all), or the named ones.
HostJudgement judge_host(const Contract& contract, const facts::HostFacts& host_facts);

// The same with its envs already judged, `judged_envs[i]` being
// host_facts.envs[i]'s (a scan judges each env once, when its probe ends).
// Throws std::invalid_argument when the counts differ.
HostJudgement judge_host(const Contract& contract, const facts::HostFacts& host_facts,
                         std::vector<EnvJudgement> judged_envs);

// judge_env, with what it throws made an error of that env (the others are
// judged): what judge_host does for each env.
EnvJudgement judge_env_contained(
    const Contract& contract, const facts::EnvFacts& env,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// Judges the image reference the host runs against each target. `who`
// names what runs it in messages: "the host", "container trainer".
std::vector<TargetJudgement> judge_targets(const Contract& contract,
                                           const facts::ImageTag& image_facts,
                                           const std::string& who = "the host");

}  // namespace envcontract::contracts
