#include "tests/e2e/agent_fixture.hpp"

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace envcontract::testing {

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

Json get_json(const AgentProcess& agent, const std::string& path, int* status) {
  const auto result = http_get(agent.url(), path);
  if (status != nullptr) {
    *status = result.status;
  }
  return Json::parse(result.body, nullptr, false).is_discarded() ? Json()
                                                                 : Json::parse(result.body);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  // Write beside and rename, as editors and config management do.
  const auto temporary = path.string() + ".new";
  std::ofstream(temporary) << text;
  std::filesystem::rename(temporary, path);
}

std::filesystem::path quick_demo_contract(const std::filesystem::path& dir) {
  std::string text =
      read_text(ENVCONTRACT_SOURCE_DIR "/tests/fixtures/demo_host/kunlunxin-demo.yaml");
  const auto at = text.find("timeout: 20s");
  if (at != std::string::npos) {
    text.replace(at, 12, "timeout: 6s");
  }
  const auto path = dir / "kunlunxin-demo.yaml";
  std::ofstream(path) << text;
  return path;
}

Json wait_for_report(const AgentProcess& agent, std::chrono::milliseconds timeout) {
  return wait_for_scan_after(agent, 0, timeout);
}

Json wait_for_scan_after(const AgentProcess& agent, std::int64_t after,
                         std::chrono::milliseconds timeout) {
  Json report;
  const bool arrived = wait_until(
      [&] {
        int status = 0;
        report = get_json(agent, "/api/v1/report", &status);
        return status == 200 && report.value("scan_id", 0) > after;
      },
      timeout);
  if (!arrived) {
    ADD_FAILURE() << "no report after scan " << after << "; agent log:\n" << agent.log();
  }
  return report;
}

std::vector<std::string> failing_causes(const Json& report, const std::string& env) {
  std::set<std::string> causes;
  for (const auto& entry : report["envs"]) {
    if (entry["name"] != env) {
      continue;
    }
    for (const auto& check : entry["checks"]) {
      if (check["status"] == "fail") {
        causes.insert(check["diagnosis"]["cause"].get<std::string>());
      }
    }
  }
  return {causes.begin(), causes.end()};
}

}  // namespace envcontract::testing
