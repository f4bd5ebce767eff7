#include "discovery/image_tag.hpp"

#include <cstdlib>
#include <sstream>

#include "process/process_runner.hpp"
#include "process/small_files.hpp"

namespace envcontract::discovery {

namespace {

// The first line that is neither blank nor a comment.
std::string first_meaningful_line(const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    line = process::trim(line);
    if (!line.empty() && !line.starts_with("#")) {
      return line;
    }
  }
  return "";
}

ImageTag from_command(const std::string& command) {
  ImageTag tag;
  tag.source = "command " + command;
  process::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", command};
  spec.environment = {{"PATH", process::k_system_path}, {"LANG", "C.UTF-8"}};
  process::ProcessLimits limits;
  limits.timeout = std::chrono::seconds(10);
  limits.max_output_bytes = 64 * 1024;
  const auto result = process::run_process(spec, limits);
  if (!result.succeeded()) {
    tag.problem = "image tag command " + result.describe() +
                  (result.err.empty() ? "" : ": " + process::trim(result.err));
    return tag;
  }
  tag.value = first_meaningful_line(result.out);
  if (tag.value.empty()) {
    tag.problem = "image tag command printed no image reference";
  }
  return tag;
}

}  // namespace

ImageTag read_image_tag(const ImageTagSource& source) {
  ImageTag tag;
  switch (source.kind) {
    case ImageTagSource::Kind::none:
      tag.problem = "no image tag source is configured";
      return tag;
    case ImageTagSource::Kind::environment: {
      tag.source = "environment " + source.value;
      const char* value = std::getenv(source.value.c_str());
      tag.value = value ? process::trim(value) : "";
      if (tag.value.empty()) {
        tag.problem = "environment variable " + source.value + " is not set";
      }
      return tag;
    }
    case ImageTagSource::Kind::command:
      return from_command(source.value);
    case ImageTagSource::Kind::file:
      break;
  }
  tag.source = "file " + source.value;
  const auto read = process::read_file_bounded(source.value, process::file_limits::small_text);
  const auto& text = read.text;
  if (!text) {
    tag.problem =
        "cannot read " + source.value + (read.refusal.empty() ? "" : ": it " + read.refusal);
    return tag;
  }
  tag.value = first_meaningful_line(*text);
  if (tag.value.empty()) {
    tag.problem = source.value + " holds no image reference";
  }
  return tag;
}

}  // namespace envcontract::discovery
