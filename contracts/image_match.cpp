#include "contracts/image_match.hpp"

namespace envcontract::contracts {
namespace {

constexpr const char* k_docker_hub = "docker.io";

// Docker's rule: the first component names a registry when it has a dot or
// a port, or is "localhost".
bool names_registry(const std::string& component) {
  return component.find('.') != std::string::npos || component.find(':') != std::string::npos ||
         component == "localhost";
}

// The last `count` '/'-separated components of `path`.
std::string last_components(const std::string& path, std::size_t count) {
  std::size_t at = path.size();
  for (std::size_t i = 0; i < count; ++i) {
    const auto slash = path.rfind('/', at == 0 ? 0 : at - 1);
    if (slash == std::string::npos || at == 0) {
      return path;
    }
    at = slash;
  }
  return path.substr(at + 1);
}

std::size_t component_count(const std::string& path) {
  std::size_t count = 1;
  for (const char c : path) {
    count += c == '/' ? 1 : 0;
  }
  return count;
}

}  // namespace

std::string NormalizedImage::text() const {
  return registry + "/" + path + (tag.empty() ? "" : ":" + tag) +
         (digest.empty() ? "" : "@" + digest);
}

NormalizedImage normalize_image(const ImageReference& reference) {
  NormalizedImage image;
  const auto slash = reference.repository.find('/');
  const std::string first =
      slash == std::string::npos ? std::string() : reference.repository.substr(0, slash);
  if (!first.empty() && names_registry(first)) {
    image.registry = first == "index.docker.io" ? k_docker_hub : first;
    image.registry_given = true;
    image.path = reference.repository.substr(slash + 1);
  } else {
    image.registry = k_docker_hub;
    image.path = reference.repository;
  }
  if (image.registry == k_docker_hub && image.path.find('/') == std::string::npos) {
    image.path = "library/" + image.path;
  }
  image.tag = reference.tag.empty() && reference.digest.empty() ? "latest" : reference.tag;
  image.digest = reference.digest;
  return image;
}

ImageComparison compare_images(const ImageReference& host_reference,
                               const ImageReference& target_reference) {
  const auto host = normalize_image(host_reference);
  const auto target = normalize_image(target_reference);
  ImageComparison comparison;
  bool names_match = false;
  if (host.registry_given || !target.registry_given || target.registry == k_docker_hub) {
    names_match = host.registry == target.registry && host.path == target.path;
  } else {
    // The host records a name without its registry (as `docker images`
    // shows a pulled image): its components must be the target's last ones.
    const std::string recorded = host_reference.repository;
    names_match = last_components(target.path, component_count(recorded)) == recorded;
    comparison.notes.push_back("the host records '" + recorded +
                               "' without a registry: compared with the end of the target's " +
                               target.registry + "/" + target.path);
  }
  // Digests decide when both are known; otherwise the tags do. A target
  // without a tag or digest accepts any tag (a moving "dev" target). What
  // the host records may leave the version undecided; another name is a
  // mismatch whatever the versions.
  bool versions_match = true;
  if (!target.digest.empty() && !host.digest.empty()) {
    versions_match = host.digest == target.digest;
  } else if (!target.digest.empty() && target_reference.tag.empty()) {
    if (names_match) {
      comparison.undecided = "target pins only the digest " + target.digest +
                             " and the host records none, so nothing decides whether it runs it";
    }
    versions_match = false;
  } else if (!host.digest.empty() && host_reference.tag.empty() && !target_reference.tag.empty()) {
    // The host records its image by digest alone (docker's RepoDigests):
    // nothing it records says which tag that digest was pulled as.
    if (names_match) {
      comparison.undecided = "names the tag " + target_reference.tag +
                             " and the host records only the digest " + host.digest +
                             ", so nothing decides whether it runs that tag";
    }
    versions_match = false;
  } else {
    if (!target_reference.tag.empty()) {
      versions_match = host.tag == target_reference.tag;
    }
    if (!target.digest.empty()) {
      comparison.notes.push_back("the host records no digest: the target's " + target.digest +
                                 " could not be compared");
    }
  }
  comparison.matches = names_match && versions_match;
  return comparison;
}

}  // namespace envcontract::contracts
