#include "tests/e2e/agent_fixture.hpp"

#include "tests/support/run_command.hpp"

#include <algorithm>
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

Json scan_prefix(const std::filesystem::path& contract, const std::filesystem::path& prefix,
                 int expected_exit) {
  const auto result = run_command({ENVCONTRACTD_PATH, "scan", "--contract", contract.string(),
                                   "--prefix", prefix.string(), "--format", "json"});
  EXPECT_EQ(result.exit_code, expected_exit) << result.err << result.out;
  const auto report = Json::parse(result.out, nullptr, false);
  EXPECT_TRUE(report.is_object()) << result.out;
  return report.is_object() && report.contains("envs") && !report["envs"].empty()
             ? report["envs"][0]
             : Json::object();
}

namespace {

// A pointer into `env` (never into a copy): the check `id`, or nullptr.
const Json* check_in(const Json& env, const std::string& id) {
  const auto checks = env.find("checks");
  if (checks == env.end() || !checks->is_array()) {
    return nullptr;
  }
  for (const auto& check : *checks) {
    if (check.value("id", "") == id) {
      return &check;
    }
  }
  return nullptr;
}

}  // namespace

const Json* find_check(const Json& env, const std::string& id) {
  const Json* check = check_in(env, id);
  if (check == nullptr) {
    ADD_FAILURE() << "no check " << id << " in " << env.value("checks", Json::array());
  }
  return check;
}

bool has_check(const Json& env, const std::string& id) {
  return check_in(env, id) != nullptr;
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

// A screenshot of the page as headless Chromium draws it, kept in the build
// dir's test-artifacts/ for people to look at; the page must have drawn
// something (a blank page is a few KB).
void keep_screenshot(const std::string& url, const std::filesystem::path& profile,
                     const std::string& name) {
  const std::filesystem::path dir = ENVCONTRACT_ARTIFACTS_DIR;
  std::filesystem::create_directories(dir);
  const auto file = dir / (name + ".png");
  std::filesystem::remove(file);
  run_command({"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
               "--hide-scrollbars", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--window-size=1500,2600", "--virtual-time-budget=10000",
               "--user-data-dir=" + profile.string(), "--screenshot=" + file.string(), url});
  ASSERT_TRUE(std::filesystem::exists(file)) << "no screenshot of " << url;
  EXPECT_GT(std::filesystem::file_size(file), 50'000U) << file << " looks blank";
}

// The DOM after the page's scripts ran, as headless Chromium renders it.
std::string rendered_dom(const std::string& url, const std::filesystem::path& profile) {
  const auto result = run_command({"/usr/bin/chromium", "--headless", "--no-sandbox",
                                   "--disable-gpu", "--disable-quic", "--no-first-run",
                                   "--disable-background-networking", "--disable-component-update",
                                   "--disable-sync", "--user-data-dir=" + profile.string(),
                                   "--virtual-time-budget=10000", "--dump-dom", url});
  return result.out;
}

}  // namespace envcontract::testing
