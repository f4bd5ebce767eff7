// contracts/image_match.cpp: the host's image reference against a target's, both normalised as
// Docker resolves them (docker.io, library/, latest), with what could not be compared noted.
#include "contracts/image_match.hpp"

#include <gtest/gtest.h>

#include <string>

namespace envcontract::contracts {
namespace {

const std::string k_digest_a = "sha256:" + std::string(64, 'a');
const std::string k_digest_b = "sha256:" + std::string(64, 'b');

// The reference as the contract loader and the host's image-tag file parse it.
ImageReference reference(const std::string& text) {
  const auto parsed = parse_image_reference(text);
  if (!parsed) {
    ADD_FAILURE() << text << ": " << parsed.error();
    return {};
  }
  return *parsed;
}

ImageComparison compare(const std::string& host, const std::string& target) {
  return compare_images(reference(host), reference(target));
}

TEST(ImageMatch, AOnePartNameIsDockerHubsOfficialImageAtLatest) {
  const auto image = normalize_image(reference("ubuntu"));
  EXPECT_EQ(image.registry, "docker.io");
  EXPECT_FALSE(image.registry_given);
  EXPECT_EQ(image.path, "library/ubuntu");
  EXPECT_EQ(image.tag, "latest");
  EXPECT_EQ(image.digest, "");
  EXPECT_EQ(image.text(), "docker.io/library/ubuntu:latest");
}

// Every spelling Docker resolves to one image normalises to the same text.
TEST(ImageMatch, TheSpellingsOfOneHubImageNormaliseAlike) {
  const std::string canonical = "docker.io/library/python:3.11-slim";
  for (const char* spelling :
       {"python:3.11-slim", "library/python:3.11-slim", "docker.io/python:3.11-slim",
        "docker.io/library/python:3.11-slim", "index.docker.io/library/python:3.11-slim"}) {
    EXPECT_EQ(normalize_image(reference(spelling)).text(), canonical) << spelling;
  }
  EXPECT_TRUE(normalize_image(reference("index.docker.io/library/python")).registry_given);
  EXPECT_TRUE(compare("python:3.11-slim", "index.docker.io/library/python:3.11-slim").matches);
  EXPECT_TRUE(compare("docker.io/library/python:3.11-slim", "python:3.11-slim").matches);
}

// A user's Hub repository has two parts already: no library/ in front.
TEST(ImageMatch, AHubUserRepositoryKeepsItsOwnPath) {
  const auto image = normalize_image(reference("flagos/runtime:2.2.0"));
  EXPECT_EQ(image.registry, "docker.io");
  EXPECT_EQ(image.path, "flagos/runtime");
  EXPECT_FALSE(compare("runtime:2.2.0", "docker.io/flagos/runtime:2.2.0").matches)
      << "'runtime' on the Hub is library/runtime, another image";
}

// Docker's rule: the first part is a registry when it has a dot, a port or
// is "localhost"; a registry other than the Hub gets no library/.
TEST(ImageMatch, RegistriesAreToldByADotAPortOrLocalhost) {
  const auto nvcr = normalize_image(reference("nvcr.io/nvidia/pytorch:24.05-py3"));
  EXPECT_EQ(nvcr.registry, "nvcr.io");
  EXPECT_TRUE(nvcr.registry_given);
  EXPECT_EQ(nvcr.path, "nvidia/pytorch");
  EXPECT_EQ(nvcr.tag, "24.05-py3");

  const auto ported = normalize_image(reference("harbor.example.com:8443/flagos/runtime:2.2.0"));
  EXPECT_EQ(ported.registry, "harbor.example.com:8443");
  EXPECT_EQ(ported.path, "flagos/runtime");
  EXPECT_EQ(ported.tag, "2.2.0");

  const auto dotless_with_port = normalize_image(reference("registry:5000/app"));
  EXPECT_EQ(dotless_with_port.registry, "registry:5000");
  EXPECT_EQ(dotless_with_port.path, "app");

  const auto local = normalize_image(reference("localhost/app:dev"));
  EXPECT_EQ(local.registry, "localhost");
  EXPECT_EQ(local.path, "app") << "library/ is the Hub's alone";

  const auto not_a_registry = normalize_image(reference("myteam/app"));
  EXPECT_EQ(not_a_registry.registry, "docker.io");
  EXPECT_FALSE(not_a_registry.registry_given);
  EXPECT_EQ(not_a_registry.path, "myteam/app");
}

TEST(ImageMatch, APortIsPartOfTheRegistry) {
  EXPECT_TRUE(compare("localhost:5000/team/app:1", "localhost:5000/team/app:1").matches);
  EXPECT_FALSE(compare("localhost:5001/team/app:1", "localhost:5000/team/app:1").matches);
  EXPECT_FALSE(compare("harbor.example.com/flagos/runtime:2.2.0",
                       "harbor.example.com:8443/flagos/runtime:2.2.0")
                   .matches);
}

// Only "latest" is implied, and only when neither tag nor digest is given.
TEST(ImageMatch, ADigestWithoutATagImpliesNoTag) {
  const auto image = normalize_image(reference("ghcr.io/org/app@" + k_digest_a));
  EXPECT_EQ(image.tag, "");
  EXPECT_EQ(image.digest, k_digest_a);
  EXPECT_EQ(image.text(), "ghcr.io/org/app@" + k_digest_a);
  EXPECT_EQ(normalize_image(reference("ghcr.io/org/app:1.0@" + k_digest_a)).text(),
            "ghcr.io/org/app:1.0@" + k_digest_a);
}

TEST(ImageMatch, AnUntaggedHostRunsLatest) {
  EXPECT_TRUE(compare("ubuntu", "ubuntu:latest").matches);
  EXPECT_TRUE(compare("docker.io/library/ubuntu", "ubuntu:latest").matches);
  EXPECT_FALSE(compare("ubuntu:22.04", "ubuntu:latest").matches)
      << "latest is a tag like any other once written";
}

// A moving target ("the dev image, whatever its build") names no tag.
TEST(ImageMatch, AnUntaggedTargetAcceptsAnyTag) {
  const auto nightly = compare("harbor.example/flagos/runtime-dev:nightly-20260101",
                               "harbor.example/flagos/runtime-dev");
  EXPECT_TRUE(nightly.matches);
  EXPECT_TRUE(nightly.notes.empty());
  EXPECT_TRUE(nightly.undecided.empty());
  EXPECT_FALSE(compare("harbor.example/flagos/runtime:nightly", "harbor.example/flagos/runtime-dev")
                   .matches);
}

TEST(ImageMatch, TagsAreComparedExactly) {
  EXPECT_TRUE(
      compare("quay.io/prometheus/node-exporter:v1.8.1", "quay.io/prometheus/node-exporter:v1.8.1")
          .matches);
  EXPECT_FALSE(
      compare("quay.io/prometheus/node-exporter:v1.8.1", "quay.io/prometheus/node-exporter:v1.8.2")
          .matches);
  EXPECT_FALSE(
      compare("quay.io/prometheus/node-exporter:V1.8.1", "quay.io/prometheus/node-exporter:v1.8.1")
          .matches)
      << "tags are case-sensitive";
}

// The same path on two registries is two images.
TEST(ImageMatch, AHostNamingItsRegistryIsHeldToTheTargetsRegistry) {
  const auto other =
      compare("mirror.example/flagos/runtime:2.2.0", "harbor.example/flagos/runtime:2.2.0");
  EXPECT_FALSE(other.matches);
  EXPECT_TRUE(other.notes.empty());
  EXPECT_FALSE(compare("harbor.example/flagos/runtime:2.2.0", "flagos/runtime:2.2.0").matches)
      << "a target without a registry is on the Hub";
}

// `docker images` shows a pulled image without its registry: the host's
// components are compared with the target's last ones, and a note says so.
TEST(ImageMatch, AHostWithoutARegistryMatchesTheEndOfTheTargetsPath) {
  const std::string target = "harbor.example/flagos/flagos-runtime-kunlunxin-xre5.37.1:2.2.0";
  const auto one_part = compare("flagos-runtime-kunlunxin-xre5.37.1:2.2.0", target);
  EXPECT_TRUE(one_part.matches);
  ASSERT_EQ(one_part.notes.size(), 1U);
  EXPECT_NE(one_part.notes[0].find("harbor.example/flagos/flagos-runtime-kunlunxin-xre5.37.1"),
            std::string::npos)
      << one_part.notes[0];

  EXPECT_TRUE(compare("flagos/flagos-runtime-kunlunxin-xre5.37.1:2.2.0", target).matches);
  EXPECT_FALSE(compare("flagos-runtime-kunlunxin-xre5.37.1:2.1.2", target).matches)
      << "the tag still decides";
  EXPECT_FALSE(compare("other/flagos/flagos-runtime-kunlunxin-xre5.37.1:2.2.0", target).matches)
      << "more components than the target has cannot be its end";
}

// Components, not characters: "los/runtime" is not the end of
// "flagos/runtime", nor "runtime" of "flagos-runtime".
TEST(ImageMatch, ThePartialComparisonIsByWholeComponents) {
  EXPECT_FALSE(compare("los/runtime:1", "harbor.example/flagos/runtime:1").matches);
  EXPECT_FALSE(compare("runtime:1", "harbor.example/flagos/flagos-runtime:1").matches);
  EXPECT_FALSE(compare("flagos:1", "harbor.example/flagos/runtime:1").matches)
      << "the first component is not the last";
}

TEST(ImageMatch, DigestsDecideWhenBothAreKnownWhateverTheTags) {
  const auto same = compare("ghcr.io/org/app:2@" + k_digest_a, "ghcr.io/org/app:1@" + k_digest_a);
  EXPECT_TRUE(same.matches) << "one digest is one image, however it was tagged";
  EXPECT_TRUE(same.notes.empty());
  EXPECT_TRUE(same.undecided.empty());
  EXPECT_FALSE(
      compare("ghcr.io/org/app:1@" + k_digest_b, "ghcr.io/org/app:1@" + k_digest_a).matches)
      << "a retagged build";
  EXPECT_FALSE(compare("ghcr.io/org/other@" + k_digest_a, "ghcr.io/org/app@" + k_digest_a).matches)
      << "the name must still be the target's";
}

TEST(ImageMatch, AHostWithoutADigestIsComparedByTagAndTheDigestNoted) {
  const auto by_tag = compare("registry.example/x:1", "registry.example/x:1@" + k_digest_a);
  EXPECT_TRUE(by_tag.matches);
  EXPECT_TRUE(by_tag.undecided.empty());
  ASSERT_EQ(by_tag.notes.size(), 1U);
  EXPECT_NE(by_tag.notes[0].find(k_digest_a), std::string::npos) << by_tag.notes[0];

  EXPECT_FALSE(compare("registry.example/x:2", "registry.example/x:1@" + k_digest_a).matches);
}

// Nothing decides: an error for the caller, never a pass.
TEST(ImageMatch, ADigestOnlyTargetAgainstAHostWithoutADigestIsUndecided) {
  const auto undecided = compare("registry.example/x:whatever", "registry.example/x@" + k_digest_a);
  EXPECT_FALSE(undecided.matches);
  EXPECT_FALSE(undecided.undecided.empty());
  EXPECT_NE(undecided.undecided.find(k_digest_a), std::string::npos) << undecided.undecided;
  EXPECT_FALSE(compare("x", "registry.example/x@" + k_digest_a).undecided.empty())
      << "a host without registry nor tag is no more decisive";
}

// The name alone decides that a host running another image does not run a
// digest-pinned target: a mismatch, not undecided (an undecided target is an
// error, which the "once one target matches, the others are skipped" rule
// leaves standing: a host on target A's image was never compliant with a
// contract that also pins target B by digest).
TEST(ImageMatch, AnotherImageIsNotUndecidedAgainstADigestOnlyTarget) {
  const auto other =
      compare("harbor.example/flagos/runtime:2.2.0", "harbor.example/flagos/other@" + k_digest_a);
  EXPECT_FALSE(other.matches);
  EXPECT_TRUE(other.undecided.empty()) << other.undecided;
  EXPECT_TRUE(compare("quay.io/a/b:1", "ghcr.io/org/app@" + k_digest_a).undecided.empty());
}

// A host that records only a digest ("name@sha256:...", as docker inspect
// --format '{{index .RepoDigests 0}}' prints it) has no tag to compare with a
// tag-only target: undecided, as a digest-only target is, never a drift.
TEST(ImageMatch, ADigestOnlyHostAgainstATagOnlyTargetIsUndecidedNotAMismatch) {
  const auto pinned = compare("registry.example/x@" + k_digest_a, "registry.example/x:1");
  EXPECT_FALSE(pinned.matches);
  EXPECT_FALSE(pinned.undecided.empty()) << "nothing the host records says which tag it runs";
}

}  // namespace
}  // namespace envcontract::contracts
