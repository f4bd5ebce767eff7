#pragma once

#include <filesystem>
#include <string>

#include "discovery/python_env.hpp"
#include "facts/host.hpp"

namespace envcontract::discovery {

using facts::to_json;

// Where the host's image reference comes from.
struct ImageTagSource {
  enum class Kind { none, file, environment, command };
  Kind kind = Kind::none;
  std::string value;  // the file path, the variable name, or the command line
};

using facts::ImageTag;

// Reads the image tag from its configured source: the first non-empty,
// non-comment line of a file or of a command's output (run by /bin/sh from
// the agent's configuration, with a clean environment and a 10 s timeout),
// or an environment variable of the agent.
ImageTag read_image_tag(const ImageTagSource& source);

}  // namespace envcontract::discovery
