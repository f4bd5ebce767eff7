#include "tests/e2e/documented_alertmanager.hpp"

#include <filesystem>
#include <regex>

#include "tests/e2e/agent_fixture.hpp"

namespace envcontract::testing {

std::string documented_alertmanager_config(const WebhookReceiver& receiver) {
  const std::string doc =
      read_text(std::filesystem::path(ENVCONTRACT_SOURCE_DIR) / "docs/fleet.md");
  const auto begin = doc.find("# alertmanager.yml\n");
  const auto receivers = doc.find("\nreceivers:\n", begin);
  if (begin == std::string::npos || receivers == std::string::npos) {
    return "";
  }
  std::string route = doc.substr(begin, receivers + 1 - begin);
  route = std::regex_replace(route, std::regex("(group_wait|group_interval): \\w+"), "$1: 1s");
  return route + "receivers:\n  - name: accelerator-team-mail\n    webhook_configs: [{url: \"" +
         receiver.url("/mail") +
         "\"}]\n  - name: accelerator-oncall\n    webhook_configs: [{url: \"" +
         receiver.url("/page") + "\"}]\n";
}

}  // namespace envcontract::testing
