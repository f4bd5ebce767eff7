#pragma once

#include <string>
#include <vector>

#include "contracts/values.hpp"

namespace envcontract::contracts {

// An image reference as Docker resolves it: "ubuntu" is
// docker.io/library/ubuntu:latest, "index.docker.io/..." is docker.io.
struct NormalizedImage {
  std::string registry;  // "docker.io" when the reference names none
  bool registry_given = false;
  std::string path;  // "library/ubuntu", "flagos-runtime/runtime-x"
  std::string tag;   // "latest" when neither tag nor digest is given
  std::string digest;
  std::string text() const;  // registry/path[:tag][@digest]
};

NormalizedImage normalize_image(const ImageReference& reference);

// Whether the host's image is the target's, after normalisation. When the
// host records less than the target names (no registry, no digest), what it
// does record is compared, and `notes` says what could not be.
struct ImageComparison {
  bool matches = false;
  std::vector<std::string> notes;
  // The target pins only a digest and the host records none: nothing
  // decides, which is an error, never a pass.
  std::string undecided;
};

ImageComparison compare_images(const ImageReference& host, const ImageReference& target);

}  // namespace envcontract::contracts
