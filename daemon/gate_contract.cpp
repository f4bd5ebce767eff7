#include "daemon/gate_contract.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>

#include "common/shown_path.hpp"
#include "daemon/contract_detection.hpp"
#include "report/printable.hpp"

namespace envcontract::daemon {

namespace {

namespace fs = std::filesystem;

// A platform config is a few KiB; a larger file in the checkout is not one.
constexpr std::size_t k_max_config_bytes = 1024 * 1024;

// Whether `path` is a file of the checkout itself: not a link (a change
// under review could link a config to any file the runner's user may read,
// whose lines the contract's errors would then show), not a FIFO, at most
// k_max_config_bytes.
bool is_plain_config(const fs::path& path) {
  std::error_code error;
  const auto status = fs::symlink_status(path, error);
  return !error && fs::is_regular_file(status) &&
         fs::file_size(path, error) <= k_max_config_bytes && !error;
}

// The workspace's platform configs, sorted; links are not followed, the
// directory's own included.
std::vector<fs::path> platform_configs(const fs::path& workspace) {
  std::vector<fs::path> configs;
  const fs::path dir = workspace / ".github/configs";
  std::error_code error;
  if (!fs::is_directory(fs::symlink_status(dir, error)) ||
      !fs::is_directory(fs::symlink_status(workspace / ".github", error))) {
    return configs;
  }
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const auto extension = it->path().extension();
    if ((extension == ".yml" || extension == ".yaml") && is_plain_config(it->path())) {
      configs.push_back(it->path());
    }
  }
  std::sort(configs.begin(), configs.end());
  return configs;
}

// The config's runner_labels, or nullopt when it cannot be read as YAML.
std::optional<std::vector<std::string>> runner_labels_of(const fs::path& config) {
  std::ifstream in(config, std::ios::binary);
  std::string text;
  text.resize(k_max_config_bytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (!in.eof() || text.size() > k_max_config_bytes) {
    return std::nullopt;
  }
  try {
    const YAML::Node root = YAML::Load(text);
    std::vector<std::string> labels;
    if (root.IsMap() && root["runner_labels"] && root["runner_labels"].IsSequence()) {
      for (const auto& label : root["runner_labels"]) {
        if (label.IsScalar()) {
          labels.push_back(label.Scalar());
        }
      }
    }
    return labels;
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

std::string names_of(const std::vector<fs::path>& configs) {
  std::string names;
  for (const auto& config : configs) {
    names += (names.empty() ? "" : ", ") + report::printable(config.stem().string());
  }
  return names.empty() ? "none" : names;
}

}  // namespace

common::Result<GateContract> choose_gate_contract(const GateContractInputs& inputs) {
  if (inputs.contract == "auto") {
    auto detected = detect_contract(inputs.contracts_dir, inputs.detect_root);
    if (!detected) {
      return common::Error{detected.error()};
    }
    return GateContract{detected->file, "contract: auto (" + detected->why + ")"};
  }
  if (!inputs.contract.empty()) {
    return GateContract{inputs.contract, "--contract"};
  }
  const fs::path configs_dir = inputs.workspace / ".github/configs";
  const auto configs = platform_configs(inputs.workspace);
  const std::string where = common::shown_path(configs_dir);
  if (!inputs.platform.empty()) {
    for (const auto& config : configs) {
      if (config.stem() == inputs.platform) {
        return GateContract{config, "platform " + inputs.platform};
      }
    }
    return common::Error{"no platform config " + report::printable(inputs.platform) + ".yml in " +
                         where + " (there: " + names_of(configs) +
                         "); name the platform the job runs for (--platform) or the contract "
                         "(--contract FILE)"};
  }
  if (!inputs.runner_labels.empty()) {
    std::vector<fs::path> matching;
    for (const auto& config : configs) {
      const auto labels = runner_labels_of(config);
      if (labels && !labels->empty() &&
          std::all_of(labels->begin(), labels->end(), [&](const std::string& label) {
            return std::find(inputs.runner_labels.begin(), inputs.runner_labels.end(), label) !=
                   inputs.runner_labels.end();
          })) {
        matching.push_back(config);
      }
    }
    if (matching.size() == 1) {
      return GateContract{matching.front(), "the runner's labels"};
    }
    if (matching.size() > 1) {
      return common::Error{"the runner's labels fit several platform configs in " + where + ": " +
                           names_of(matching) + "; name one (--platform)"};
    }
  }
  if (configs.size() == 1) {
    return GateContract{configs.front(), "the only platform config in " + where};
  }
  return common::Error{
      configs.empty()
          ? "no contract: " + where +
                " holds no platform config; name the contract (--contract FILE, or auto) or run "
                "the gate in the job's checkout (--workspace DIR)"
          : "no contract: " + where + " holds several platform configs (" + names_of(configs) +
                ") and none was chosen; name the platform (--platform NAME, or "
                "ENVCONTRACT_PLATFORM) or the runner's labels (--runner-label)"};
}

}  // namespace envcontract::daemon
