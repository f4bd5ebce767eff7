#pragma once

#include <filesystem>
#include <string>

#include "probes/python_env.hpp"

namespace envcontract::probes {

// Where the host's image reference comes from.
struct ImageTagSource {
  enum class Kind { none, file, environment, command };
  Kind kind = Kind::none;
  std::string value;  // the file path, the variable name, or the command line
};

struct ImageTag {
  std::string value;    // e.g. harbor.example/.../flagos-runtime-kunlunxin-xre5.37.1:2.1.2
  std::string source;   // "file /etc/flagos-image", "environment FLAGOS_IMAGE"
  std::string problem;  // why it could not be read; empty on success
};

// Reads the image tag from its configured source: the first non-empty,
// non-comment line of a file or of a command's output (run by /bin/sh from
// the agent's configuration, with a clean environment and a 10 s timeout),
// or an environment variable of the agent.
ImageTag read_image_tag(const ImageTagSource& source);

Json to_json(const ImageTag& tag);

}  // namespace envcontract::probes
