#include "contracts/host_judgement.hpp"

#include <algorithm>
#include <stdexcept>
#include <variant>

#include "contracts/env_facts.hpp"
#include "contracts/image_match.hpp"
#include "contracts/judges.hpp"
#include "contracts/values.hpp"

namespace envcontract::contracts {
namespace {

std::string mismatch_summary(const std::string& who, const std::string& host_image,
                             const ImageReference& host, const Target& target,
                             const ImageReference& wanted) {
  const auto host_normal = normalize_image(host);
  const auto wanted_normal = normalize_image(wanted);
  if (host_normal.registry == wanted_normal.registry && host_normal.path == wanted_normal.path &&
      !wanted.tag.empty() && host_normal.tag != wanted.tag) {
    return who + " runs " + host.repository + " tag " + (host.tag.empty() ? "(none)" : host.tag) +
           ", target '" + target.name + "' wants tag " + wanted.tag;
  }
  if (host.tag == wanted.tag && host.digest == wanted.digest) {
    // Identical tags: the difference is the name; show both whole.
    return who + " runs " + host_normal.text() + ", target '" + target.name + "' wants " +
           wanted_normal.text() + " (the same tag, another image)";
  }
  return who + " runs " + host_image + ", target '" + target.name + "' wants " + target.image;
}

CheckResult image_check(const Target& target) {
  CheckResult check;
  check.id = "image";
  check.kind = "image";
  check.expected = target.image;
  return check;
}

}  // namespace

std::vector<TargetJudgement> judge_targets(const Contract& contract,
                                           const facts::ImageTag& image_facts,
                                           const std::string& who) {
  std::vector<TargetJudgement> judged;
  const std::string& host_image = image_facts.value;
  const std::string& source = image_facts.source;
  const std::string& problem = image_facts.problem;
  const auto parsed = parse_image_reference(host_image);
  const ImageReference* host_reference = parsed ? &*parsed : nullptr;
  bool any_match = false;
  for (const auto& target : contract.targets) {
    TargetJudgement result{target.name, target.image, image_check(target)};
    result.check.actual = host_image.empty() ? Json(nullptr) : Json(host_image);
    const auto wanted_parsed = parse_image_reference(target.image);
    const ImageReference* wanted = wanted_parsed ? &*wanted_parsed : nullptr;
    if (host_image.empty()) {
      result.check.status = CheckStatus::error;
      result.check.diagnosis = Diagnosis{
          "image_unknown",
          problem.empty() ? who + "'s image reference is not configured, so target '" +
                                target.name + "' cannot be judged"
                          : who + "'s image reference could not be read: " + problem,
          {{"source", source}, {"problem", problem}},
          who == "the host" ? "tell the agent where the image reference is: --image-tag-file FILE "
                              "(or image_tag in agent.yaml)"
                            : "give the container's 'image' or 'image_command', or its "
                              "'container' so that its runtime is asked (docs/containers.md)"};
    } else if (host_reference == nullptr) {
      result.check.status = CheckStatus::error;
      result.check.diagnosis = Diagnosis{
          "image_unknown",
          who + "'s image reference is not an image reference: " + parsed.error(),
          {{"source", source}, {"value", host_image}},
          "fix the file or command the agent reads the image reference from (" + source + ")"};
    } else if (const auto comparison =
                   wanted != nullptr ? compare_images(*host_reference, *wanted) : ImageComparison{};
               !comparison.undecided.empty()) {
      result.check.status = CheckStatus::error;
      result.check.diagnosis = Diagnosis{
          "image_unknown",
          "target '" + target.name + "' " + comparison.undecided,
          {{"host_image", host_image}, {"source", source}, {"target_image", target.image}},
          "record the image's whole reference in the image-tag file, its tag and its digest: "
          "registry/name:tag@sha256:... (the digest from docker inspect --format "
          "'{{index .RepoDigests 0}}')"};
    } else if (comparison.matches) {
      judges::pass(result.check);
      for (const auto& note : comparison.notes) {
        result.check.notes.push_back(
            Diagnosis{"image_partial",
                      note,
                      {{"host_image", host_image}, {"target_image", target.image}},
                      "record the full reference (registry/name:tag@"
                      "digest) in the image-tag file to compare it all"});
      }
      any_match = true;
    } else {
      judges::fail(result.check, "image_mismatch",
                   wanted != nullptr
                       ? mismatch_summary(who, host_image, *host_reference, target, *wanted)
                       : who + " runs " + host_image + ", target '" + target.name + "' wants " +
                             target.image,
                   {{"host_image", host_image}, {"source", source}, {"target_image", target.image}},
                   (who == "the host" ? "re-create the host's container from "
                                      : "re-create " + who + " from ") +
                       target.image + ", or update the contract if the target has moved");
    }
    judged.push_back(std::move(result));
  }
  // A host runs one image: once it matches a target, the others do not apply
  // (those its reference could not decide either: it runs the one matched).
  if (any_match) {
    for (auto& result : judged) {
      if (result.check.status == CheckStatus::fail ||
          (result.check.status == CheckStatus::error && result.check.diagnosis &&
           result.check.diagnosis->cause == "image_unknown")) {
        result.check.status = CheckStatus::skip;
        result.check.diagnosis->cause = "other_target";
        result.check.diagnosis->summary = who + " runs another target's image (" + host_image + ")";
        result.check.diagnosis->remedy = "";
      }
    }
  }
  return judged;
}

namespace {

std::string count_envs(std::size_t count) {
  return std::to_string(count) + (count == 1 ? " env" : " envs");
}

// Applies the contract's `envs` rule; returns the reasons it is not met.
std::vector<std::string> unmet_env_rule(const Contract& contract, const HostJudgement& host,
                                        bool& only_errors) {
  std::vector<std::string> reasons;
  std::size_t drifted = 0;
  std::size_t errored = 0;
  for (const auto& env : host.envs) {
    drifted += env.judgement.verdict == EnvVerdict::drift ? 1 : 0;
    errored += env.judgement.verdict == EnvVerdict::error ? 1 : 0;
  }
  only_errors = drifted == 0;
  const std::string tally = " (" + count_envs(host.envs.size()) + ": " + std::to_string(drifted) +
                            " drift, " + std::to_string(errored) + " error)";
  switch (contract.envs.mode) {
    case EnvRequirement::Mode::any:
      if (host.envs.empty()) {
        reasons.push_back("no Python env was found on the host");
        only_errors = false;
      } else if (host.compliant_envs.empty()) {
        reasons.push_back("no env satisfies the contract" + tally);
      }
      break;
    case EnvRequirement::Mode::all:
      if (host.envs.empty()) {
        reasons.push_back("no Python env was found on the host");
        only_errors = false;
      } else if (host.compliant_envs.size() != host.envs.size()) {
        reasons.push_back("the contract wants every env to comply, " +
                          std::to_string(drifted + errored) + " of " +
                          count_envs(host.envs.size()) + " do not");
      }
      break;
    case EnvRequirement::Mode::named:
      for (const auto& name : contract.envs.names) {
        const auto found = std::find_if(host.envs.begin(), host.envs.end(),
                                        [&](const auto& env) { return env.name == name; });
        if (found == host.envs.end()) {
          reasons.push_back("env '" + name + "', which the contract names, was not found");
          only_errors = false;
        } else if (found->judgement.verdict != EnvVerdict::compliant) {
          reasons.push_back("env '" + name + "', which the contract names, is " +
                            to_string(found->judgement.verdict));
          only_errors = only_errors && found->judgement.verdict == EnvVerdict::error;
        }
      }
      break;
  }
  return reasons;
}

}  // namespace

EnvJudgement judge_env_contained(const Contract& contract, const facts::EnvFacts& env,
                                 std::chrono::system_clock::time_point now) {
  try {
    return judge_env(contract, env, now);
  } catch (const std::exception& e) {
    CheckResult result;
    result.id = "env:judgement";
    result.kind = "env_facts";
    result.severity = Severity::required;
    result.status = CheckStatus::error;
    result.diagnosis = Diagnosis{"judge_error", "judging this env failed: " + std::string(e.what()),
                                 Json::object(),
                                 "report it with the env's facts (envcontractd facts --json): "
                                 "this is the agent's fault, not the env's"};
    EnvJudgement judgement;
    judgement.verdict = EnvVerdict::error;
    judgement.checks.push_back(std::move(result));
    return judgement;
  }
}

HostJudgement judge_host(const Contract& contract, const facts::HostFacts& host_facts) {
  std::vector<EnvJudgement> judged;
  judged.reserve(host_facts.envs.size());
  for (const auto& env : host_facts.envs) {
    judged.push_back(judge_env_contained(contract, env));
  }
  return judge_host(contract, host_facts, std::move(judged));
}

HostJudgement judge_host(const Contract& contract, const facts::HostFacts& host_facts,
                         std::vector<EnvJudgement> judged_envs) {
  if (judged_envs.size() != host_facts.envs.size()) {
    throw std::invalid_argument("judge_host: " + std::to_string(judged_envs.size()) +
                                " judgements for " + std::to_string(host_facts.envs.size()) +
                                " envs");
  }
  HostJudgement host;
  host.targets = judge_targets(contract, host_facts.image);
  for (std::size_t i = 0; i < host_facts.envs.size(); ++i) {
    NamedEnvJudgement judged{host_facts.envs[i].env.name, std::move(judged_envs[i])};
    if (judged.judgement.verdict == EnvVerdict::compliant) {
      host.compliant_envs.push_back(judged.name);
    }
    host.envs.push_back(std::move(judged));
  }

  // A host whose images are its containers' (container targets, and no
  // image reference of its own configured) is not held to one.
  if (!host_facts.containers.empty() && host_facts.image.source.empty()) {
    for (auto& target : host.targets) {
      if (target.check.status == CheckStatus::error && target.check.diagnosis) {
        target.check.status = CheckStatus::skip;
        target.check.diagnosis->cause = "image_of_containers";
        target.check.diagnosis->summary =
            "the host's own image is not configured: the targets are judged on its containers";
        target.check.diagnosis->remedy = "";
      }
    }
  }
  // Each container runs an image of its own, held to the same targets.
  for (const auto& container : host_facts.containers) {
    ContainerJudgement judged{container.name, {}};
    if (container.problem.empty()) {
      judged.targets = judge_targets(contract, container.image, "container " + container.name);
    }
    host.containers.push_back(std::move(judged));
  }
  bool target_failed = false;
  const auto note_targets = [&](const std::vector<TargetJudgement>& targets) {
    for (const auto& target : targets) {
      if (target.check.status == CheckStatus::fail) {
        target_failed = true;
        host.reasons.push_back(target.check.diagnosis->summary);
      } else if (target.check.status == CheckStatus::error) {
        host.reasons.push_back(target.check.diagnosis->summary);
      }
    }
  };
  note_targets(host.targets);
  for (const auto& container : host.containers) {
    note_targets(container.targets);
  }
  // Facts that miss part of the host (discovery blocked on a filesystem that
  // does not answer): never compliant on what was not seen, and an env rule
  // unmet for want of envs is that error, not drift.
  bool incomplete = false;
  for (const auto& missing : host_facts.incomplete) {
    host.reasons.push_back(missing);
    incomplete = true;
  }
  const bool env_drifted = std::any_of(host.envs.begin(), host.envs.end(), [](const auto& env) {
    return env.judgement.verdict == EnvVerdict::drift;
  });
  bool env_rule_only_errors = false;
  auto env_reasons = unmet_env_rule(contract, host, env_rule_only_errors);
  const bool env_rule_met = env_reasons.empty();
  host.reasons.insert(host.reasons.end(), env_reasons.begin(), env_reasons.end());

  // Every reason comes from a target or the env rule: drift when one of them
  // drifts, else only unjudgeable parts remain.
  if (host.reasons.empty()) {
    host.verdict = EnvVerdict::compliant;
  } else if (target_failed ||
             (!env_rule_met && !env_rule_only_errors && (!incomplete || env_drifted))) {
    host.verdict = EnvVerdict::drift;
  } else {
    host.verdict = EnvVerdict::error;
  }
  return host;
}

}  // namespace envcontract::contracts
