#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/agent_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::testing {

using Json = nlohmann::ordered_json;

// Polls `condition` every 50 ms until it holds or `timeout` passes.
bool wait_until(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(60));

// GET `path` and parse the body as JSON (null when it is not JSON).
Json get_json(const AgentProcess& agent, const std::string& path, int* status = nullptr);

// The demo contract with a 6 s smoke timeout (the hang is the point, not the
// wait), written into `dir`.
std::filesystem::path quick_demo_contract(const std::filesystem::path& dir);

std::string read_text(const std::filesystem::path& path);
void write_text(const std::filesystem::path& path, const std::string& text);

// Waits for the first report and returns it; fails the test with the log if
// none comes.
Json wait_for_report(const AgentProcess& agent,
                     std::chrono::milliseconds timeout = std::chrono::seconds(90));

// Waits until the report's scan_id exceeds `after`.
Json wait_for_scan_after(const AgentProcess& agent, std::int64_t after,
                         std::chrono::milliseconds timeout = std::chrono::seconds(90));

// `envcontractd scan --contract CONTRACT --prefix PREFIX --format json`: the
// one env's report (an empty object, and a test failure, when there is none
// or the exit status is not `expected_exit`).
Json scan_prefix(const std::filesystem::path& contract, const std::filesystem::path& prefix,
                 int expected_exit);

// The check `id` in an env's report; nullptr, and a test failure, when absent.
const Json* find_check(const Json& env, const std::string& id);

// Whether an env's report has a check `id`.
bool has_check(const Json& env, const std::string& id);

// The causes of an env's failing checks in a report.
std::vector<std::string> failing_causes(const Json& report, const std::string& env);

// A screenshot of the page at `url` as headless Chromium draws it, kept as
// test-artifacts/NAME.png in the build dir for people to look at; fails the
// test when the page drew nothing.
void keep_screenshot(const std::string& url, const std::filesystem::path& profile,
                     const std::string& name);

// The DOM after the page's scripts ran, as headless Chromium renders it.
std::string rendered_dom(const std::string& url, const std::filesystem::path& profile);

}  // namespace envcontract::testing
