#include "probes/image_tag.hpp"

#include <cstdlib>
#include <sstream>

#include "probes/small_files.hpp"

namespace envcontract::probes {

ImageTag read_image_tag(const ImageTagSource& source) {
  ImageTag tag;
  switch (source.kind) {
    case ImageTagSource::Kind::none:
      tag.problem = "no image tag source is configured";
      return tag;
    case ImageTagSource::Kind::environment: {
      tag.source = "environment " + source.value;
      const char* value = std::getenv(source.value.c_str());
      tag.value = value ? trim(value) : "";
      if (tag.value.empty()) {
        tag.problem = "environment variable " + source.value + " is not set";
      }
      return tag;
    }
    case ImageTagSource::Kind::file:
      break;
  }
  tag.source = "file " + source.value;
  const auto text = read_small_file(source.value, 64 * 1024);
  if (!text) {
    tag.problem = "cannot read " + source.value;
    return tag;
  }
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    line = trim(line);
    if (!line.empty() && !line.starts_with("#")) {
      tag.value = line;
      return tag;
    }
  }
  tag.problem = source.value + " holds no image reference";
  return tag;
}

Json to_json(const ImageTag& tag) {
  return {{"value", tag.value}, {"source", tag.source}, {"problem", tag.problem}};
}

}  // namespace envcontract::probes
