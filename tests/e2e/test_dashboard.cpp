// The dashboard in headless Chromium and the metrics through Prometheus'
// own checker, both against a real agent on the demo host.
#include "common/json_text.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers

// Some envs of the demo host (paths under it).
std::vector<std::string> arguments_for(const TempDir& dir, const std::vector<std::string>& envs) {
  std::vector<std::string> arguments = {
      "--contract",       quick_demo_contract(dir.path()).string(),
      "--image-tag-file", (demo_host() / "etc/flagos-image").string(),
      "--database",       (dir.path() / "agent.db").string()};
  for (const auto& env : envs) {
    arguments.insert(arguments.end(), {"--prefix", (demo_host() / env).string()});
  }
  return arguments;
}

// An agent on one env of a copy of the demo host the test may change.
std::unique_ptr<AgentProcess> agent_on_copy(const TempDir& dir, const std::filesystem::path& env) {
  const auto host = dir.path() / "host";
  return std::make_unique<AgentProcess>(
      dir.path(), std::vector<std::string>{"--contract", quick_demo_contract(dir.path()).string(),
                                           "--prefix", env.string(), "--image-tag-file",
                                           (host / "etc/flagos-image").string(), "--database",
                                           (dir.path() / "agent.db").string()});
}

TEST(Dashboard, RendersTheVerdictEveryEnvAndAnOpenEnvsDiagnoses) {
  if (!std::filesystem::exists("/usr/bin/chromium")) {
    GTEST_SKIP() << "chromium is not installed (scripts/test installs it): dashboard not tested";
  }
  TempDir dir;
  // A hang, a CUDA torch, a venv without torch_fl.
  AgentProcess agent(dir.path(),
                     arguments_for(dir, {"miniconda3/envs/torch-fl-cpu",
                                         "miniconda3/envs/torch-fl-hf-test", "venvs/xpu210v"}));
  const auto report = wait_for_report(agent);

  const auto page = http_get(agent.url(), "/");
  EXPECT_EQ(page.headers.at("Content-Security-Policy"),
            "default-src 'self'; frame-ancestors 'none'");
  const auto dom = rendered_dom(agent.url() + "/", dir.path() / "profile");
  EXPECT_NE(dom.find(R"(<span id="verdict" class="badge drift">drift</span>)"), std::string::npos)
      << dom;
  EXPECT_NE(dom.find("no env satisfies the contract (3 envs: 3 drift, 0 error)"),
            std::string::npos);
  for (const auto& env : report["envs"]) {
    EXPECT_NE(dom.find("data-env=\"" + env["name"].get<std::string>() + "\""), std::string::npos)
        << env["name"];
  }
  EXPECT_NE(dom.find("tag 2.1.2, target 'ci' wants tag 2.2.0"), std::string::npos);
  EXPECT_EQ(dom.find("data-details="), std::string::npos);  // nothing open by default

  // The matrix: a row per env, a column per check, each cell a status told
  // by symbol and word (not colour alone) and a link to its diagnosis.
  EXPECT_NE(dom.find(R"(<table id="matrix"><thead><tr><th scope="col">env</th>)"),
            std::string::npos)
      << dom;
  for (const auto& env : report["envs"]) {
    EXPECT_NE(
        dom.find("<tr data-env=\"" + env["name"].get<std::string>() + "\"><th scope=\"row\">"),
        std::string::npos)
        << env["name"];
  }
  const auto cell =
      dom.find(R"(data-env="torch-fl-cpu" data-check="first-device-op" data-status="fail")");
  ASSERT_NE(cell, std::string::npos) << dom;
  const auto cell_text = dom.substr(cell, dom.find("</td>", cell) - cell);
  EXPECT_NE(cell_text.find(R"(<a href="#env=torch-fl-cpu&amp;check=first-device-op">✗ fail)"),
            std::string::npos)
      << cell_text;
  EXPECT_NE(cell_text.find(R"(<span class="cell-cause">hang</span>)"), std::string::npos)
      << cell_text;
  // Following a cell's link opens that env's diagnoses at that check.
  const auto focused = rendered_dom(agent.url() + "/#env=torch-fl-cpu&check=first-device-op",
                                    dir.path() / "profile4");
  EXPECT_NE(focused.find(R"(data-details="torch-fl-cpu")"), std::string::npos) << focused;
  EXPECT_NE(focused.find(R"(data-check="first-device-op" data-cause="hang" class="focused")"),
            std::string::npos)
      << focused;
  // ...with its history: the table of transitions and the timeline drawn
  // from /api/v1/history (one failing segment after one scan).
  EXPECT_NE(focused.find("History of first-device-op in torch-fl-cpu"), std::string::npos);
  EXPECT_NE(focused.find(R"(<svg class="timeline")"), std::string::npos) << focused;
  EXPECT_NE(focused.find(R"(<rect class="segment fail" data-status="fail")"), std::string::npos);
  EXPECT_NE(focused.find("<title>fail since "), std::string::npos);

  keep_screenshot(agent.url() + "/", dir.path() / "shot1", "dashboard");
  keep_screenshot(agent.url() + "/#env=torch-fl-cpu&check=first-device-op", dir.path() / "shot2",
                  "dashboard-check-open");

  // A link naming an env opens it: its checks with causes, evidence and remedies.
  const auto open = rendered_dom(agent.url() + "/#env=torch-fl-cpu", dir.path() / "profile2");
  EXPECT_NE(open.find(R"(data-details="torch-fl-cpu")"), std::string::npos) << open;
  EXPECT_NE(open.find(R"(data-check="first-device-op" data-cause="hang")"), std::string::npos);
  // What the sampler saw, when it is not that: a loaded machine can change
  // how many threads run at the moment of the sample.
  const auto threads_at = open.find("66 threads");
  EXPECT_NE(open.find("1 of 66 threads running at"), std::string::npos)
      << (threads_at == std::string::npos
              ? std::string("no \"66 threads\" in the page")
              : open.substr(threads_at < 200 ? 0 : threads_at - 200, 400));
  EXPECT_NE(open.find("<summary>evidence</summary>"), std::string::npos);
  // The hang drawn for people: the threads, the spinning one marked, its stack.
  EXPECT_NE(open.find(R"(<table class="threads">)"), std::string::npos) << open;
  EXPECT_NE(open.find(R"(<tr class="spinning">)"), std::string::npos);
  EXPECT_NE(open.find("the spinning thread's stack, innermost first:"), std::string::npos);
  EXPECT_NE(open.find("<code>xpu_wait (libxpurt.so.1)</code>"), std::string::npos);

  // The ABI near miss as two signatures, the differing parameter marked in
  // each; the missing library with the directories searched, in order.
  const auto hf = rendered_dom(agent.url() + "/#env=torch-fl-hf-test", dir.path() / "profile5");
  EXPECT_NE(hf.find(R"(libxpytorch.so wants</span><code class="signature">)"
                    R"(c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, )"
                    R"(<mark>int</mark>, bool)</code>)"),
            std::string::npos)
      << hf;
  EXPECT_NE(hf.find(R"(libc10_cuda.so defines</span><code class="signature">)"
                    R"(c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, )"
                    R"(<mark>unsigned int</mark>, bool)</code>)"),
            std::string::npos);
  EXPECT_NE(hf.find(R"(<code>libbkcl.so</code> needed by <code>)"), std::string::npos);
  const auto searched = hf.find(R"(<ol class="searched"><li><code>)");
  ASSERT_NE(searched, std::string::npos);
  EXPECT_NE(hf.find("(LD_LIBRARY_PATH)</code></li>", searched), std::string::npos);

  // A malformed fragment part is ignored; the page still renders, and the
  // well-formed part still opens its env.
  const auto malformed = rendered_dom(agent.url() + "/#env=%zz&env=%E0%A4%A&env=torch-fl-cpu",
                                      dir.path() / "profile3");
  EXPECT_NE(malformed.find(R"(<span id="verdict" class="badge drift">drift</span>)"),
            std::string::npos)
      << malformed;
  EXPECT_NE(malformed.find(R"(data-details="torch-fl-cpu")"), std::string::npos);
}

// While the first scan runs, the page shows each env as soon as it is
// judged, the others as pending, and the host's verdict as pending.
TEST(Dashboard, TheFirstScanShowsEnvsAsTheyAreJudged) {
  if (!std::filesystem::exists("/usr/bin/chromium")) {
    GTEST_SKIP() << "chromium is not installed (scripts/test installs it): dashboard not tested";
  }
  TempDir dir;
  // The demo contract's own 20 s smoke time-out: the hang keeps the scan
  // going while the page is drawn.
  AgentProcess agent(
      dir.path(),
      {"--contract", ENVCONTRACT_SOURCE_DIR "/tests/fixtures/demo_host/kunlunxin-demo.yaml",
       "--prefix", (demo_host() / "miniconda3/envs/torch-fl-cpu").string(), "--prefix",
       (demo_host() / "venvs/xpu210v").string(), "--image-tag-file",
       (demo_host() / "etc/flagos-image").string(), "--database",
       (dir.path() / "agent.db").string(), "--concurrency", "2"});
  ASSERT_TRUE(wait_until(
      [&] {
        const auto partial = get_json(agent, "/api/v1/report");
        return partial.contains("partial") && partial["partial"]["done"] == 1;
      },
      std::chrono::seconds(15)))
      << agent.log();
  const auto dom = rendered_dom(agent.url() + "/", dir.path() / "profile");
  EXPECT_NE(dom.find(R"(<span id="verdict" class="badge pending">pending</span>)"),
            std::string::npos)
      << dom;
  EXPECT_NE(dom.find("the first scan is running: 1 of 2 envs judged so far"), std::string::npos);
  EXPECT_NE(dom.find(R"(<tr class="env" data-env="xpu210v")"), std::string::npos);
  EXPECT_NE(dom.find(R"(<tr class="env pending" data-env="torch-fl-cpu")"), std::string::npos);
  EXPECT_NE(dom.find("being probed by the first scan"), std::string::npos);
}

// A check fixed between two scans: its timeline shows the failing segment,
// then the passing one, and its history table both transitions.
TEST(Dashboard, TheTimelineShowsAFixBetweenTwoScans) {
  if (!std::filesystem::exists("/usr/bin/chromium")) {
    GTEST_SKIP() << "chromium is not installed (scripts/test installs it): dashboard not tested";
  }
  TempDir dir;
  const auto host = dir.path() / "host";
  build_demo_host(host);
  const auto env = host / "miniconda3/envs/torch-fl-activate";
  const auto agent_process = agent_on_copy(dir, env);
  const auto& agent = *agent_process;
  wait_for_report(agent);
  const auto failing_flagtree = [&] {
    return http_get(agent.url(), "/metrics").body.find(R"(check="flagtree-xpu")") !=
           std::string::npos;
  };
  EXPECT_TRUE(failing_flagtree());
  EXPECT_TRUE(failing_flagtree()) << "the second scrape, from the kept series";
  // FlagTree's xpu backend, as the fix.
  const auto backends = env / "lib/python3.10/site-packages/triton/backends";
  std::filesystem::create_directories(backends / "xpu");
  write_text(backends / "xpu/__init__.py", "");
  const auto posted =
      http_post(agent.url(), "/api/v1/scan", "", {{"X-Requested-By", "envcontract-tests"}});
  ASSERT_EQ(posted.status, 202) << posted.body;
  wait_for_scan_after(agent, 1);
  EXPECT_FALSE(failing_flagtree()) << "/metrics still shows the series of the first report";

  const std::string url = agent.url() + "/#env=torch-fl-activate&check=flagtree-xpu";
  const auto dom = rendered_dom(url, dir.path() / "profile");
  const auto failing = dom.find(R"(<rect class="segment fail" data-status="fail")");
  const auto passing = dom.find(R"(<rect class="segment pass" data-status="pass")");
  ASSERT_NE(failing, std::string::npos) << dom;
  ASSERT_NE(passing, std::string::npos) << dom;
  EXPECT_LT(failing, passing);
  EXPECT_NE(dom.find("<title>pass since "), std::string::npos);
  EXPECT_NE(dom.find("triton_backend_missing"), std::string::npos);
  keep_screenshot(url, dir.path() / "shot", "dashboard-timeline");
}

// What activation changes, drawn as a diff under an env's diagnoses: the
// vendor's LD_LIBRARY_PATH entry by entry, and a token an activate.d script
// sets named but never shown.
TEST(Dashboard, ActivationIsDrawnAsADiffWithoutTheValuesOfSecrets) {
  if (!std::filesystem::exists("/usr/bin/chromium")) {
    GTEST_SKIP() << "chromium is not installed (scripts/test installs it): dashboard not tested";
  }
  TempDir dir;
  const auto host = dir.path() / "host";
  build_demo_host(host);
  const auto env = host / "miniconda3/envs/torch-fl-activate";
  write_text(env / "etc/conda/activate.d/zz_token.sh",
             "export HF_TOKEN=hf_not_for_the_dashboard\n"
             "export PYTHONPATH=/opt/extra\n"
             "export CONDA_CHANNEL_ALIAS=https://repo.example/t/tk-not-shown/\n"
             "export MIRROR_HOME=https://who:pw-not-shown@mirror.example/simple\n"
             "export XPU_" +
                 std::string(1000, 'A') + "_PATH=/opt/long\n");
  const auto agent_process = agent_on_copy(dir, env);
  const auto& agent = *agent_process;
  const auto report = wait_for_report(agent);
  const auto& activation = report["envs"][0]["activation"];
  EXPECT_EQ(activation["scripts"].size(), 2U) << activation;
  EXPECT_EQ(activation["problem"], "");
  const std::string text = common::json_text(report);
  for (const char* secret : {"hf_not_for_the_dashboard", "tk-not-shown", "pw-not-shown"}) {
    EXPECT_EQ(text.find(secret), std::string::npos) << secret << " is in the report";
  }
  EXPECT_NE(text.find("https://***@mirror.example/simple"), std::string::npos);
  // A name of any length is cut: the env's scripts choose it.
  EXPECT_EQ(text.find(std::string(300, 'A')), std::string::npos);
  EXPECT_NE(text.find("... (1009 bytes)"), std::string::npos) << text;

  const std::string url = agent.url() + "/#env=torch-fl-activate";
  const auto dom = rendered_dom(url, dir.path() / "profile");
  EXPECT_NE(dom.find(R"(<details class="activation" data-activation="torch-fl-activate")"),
            std::string::npos)
      << dom;
  EXPECT_NE(dom.find(R"(data-variable="LD_LIBRARY_PATH">LD_LIBRARY_PATH (set by activation))"),
            std::string::npos)
      << dom;
  // Entry by entry, the vendor's directories first.
  const auto xpu = dom.find("<span class=\"added\">+ " + (host / "usr/local/xpu/lib").string());
  const auto xcudart =
      dom.find("<span class=\"added\">+ " + (host / "usr/local/xcudart/lib").string());
  EXPECT_NE(xpu, std::string::npos) << dom;
  EXPECT_LT(xpu, xcudart);
  // PATH keeps the system's entries after the env's bin.
  EXPECT_NE(dom.find("<span class=\"added\">+ " + (env / "bin").string()), std::string::npos);
  EXPECT_NE(dom.find("<span class=\"kept\">  /usr/bin"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<span class=\"added\">+ /opt/extra"), std::string::npos);
  EXPECT_NE(dom.find("HF_TOKEN (set by activation)"), std::string::npos);
  EXPECT_NE(dom.find("(set, 24 bytes; value not shown)"), std::string::npos) << dom;
  EXPECT_EQ(dom.find("hf_not_for_the_dashboard"), std::string::npos);
  keep_screenshot(url, dir.path() / "shot", "dashboard-activation");
}

// An env named as markup by whoever made it: the page shows the name as
// text, everywhere it appears, and runs none of it.
TEST(Dashboard, AnEnvNamedAsMarkupIsShownAsText) {
  if (!std::filesystem::exists("/usr/bin/chromium")) {
    GTEST_SKIP() << "chromium is not installed (scripts/test installs it): dashboard not tested";
  }
  TempDir dir;
  const auto host = dir.path() / "host";
  build_demo_host(host);
  const std::string hostile = R"(<img src=x onerror="document.title='pwned'">)";
  std::filesystem::rename(host / "venvs/xpu210v", host / "venvs" / hostile);
  const auto agent_process = agent_on_copy(dir, host / "venvs" / hostile);
  const auto& agent = *agent_process;
  const auto report = wait_for_report(agent);
  ASSERT_EQ(report["envs"][0]["name"], hostile);
  const auto script = dir.write("look.js", R"js(
const wait = (ms) => new Promise((done) => setTimeout(done, ms));
for (let i = 0; i < 100 && !document.querySelector("#matrix tbody tr"); i++) await wait(100);
document.querySelector("#env-table tr.env").click();
await wait(300);
const opened = !!document.querySelector("tr.details");
// A click on a failing cell of the matrix opens that check's diagnosis.
const cell = document.querySelector("#matrix td.cell.fail a");
const clickedCheck = cell.closest("td").getAttribute("data-check");
cell.click();
for (let i = 0; i < 50 && !document.querySelector("tr.focused"); i++) await wait(100);
const focused = document.querySelector("tr.focused");
return { images: document.querySelectorAll("img").length, title: document.title,
  row: document.querySelector("#matrix tbody th").textContent,
  envRow: document.querySelector("#env-table tr.env td").textContent, opened, clickedCheck,
  focusedCheck: focused ? focused.getAttribute("data-check") : "" };
)js");
  const auto driven =
      run_command({"/usr/bin/python3", ENVCONTRACT_SOURCE_DIR "/tests/support/browser.py",
                   (dir.path() / "profile").string(), agent.url() + "/", script.string(), "60"});
  ASSERT_EQ(driven.exit_code, 0) << driven.err;
  const auto seen = Json::parse(driven.out, nullptr, false);
  EXPECT_EQ(seen["images"], 0) << driven.out;
  EXPECT_EQ(seen["title"], report["host"].get<std::string>() + ": drift · envcontract")
      << driven.out;
  EXPECT_NE(seen["row"].get<std::string>().find(hostile), std::string::npos) << driven.out;
  EXPECT_EQ(seen["envRow"], hostile);
  EXPECT_EQ(seen["opened"], true) << "its diagnoses open on a click";
  EXPECT_NE(seen["clickedCheck"], "") << driven.out;
  EXPECT_EQ(seen["focusedCheck"], seen["clickedCheck"]) << "a cell's click opens its diagnosis";
  keep_screenshot(agent.url() + "/", dir.path() / "shot", "dashboard-hostile-name");
}

TEST(Metrics, PassPromtoolAndCountWhatFails) {
  TempDir dir;
  auto arguments = arguments_for(dir, {"miniconda3/envs/torch-fl-xpu-py311"});
  arguments.insert(arguments.end(), {"--interval", "24h"});
  AgentProcess agent(dir.path(), arguments);
  wait_for_report(agent);
  const auto metrics = http_get(agent.url(), "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.headers.at("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const auto& text = metrics.body;
  EXPECT_NE(text.find("envcontract_host_compliant 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("envcontract_scans_total 1\n"), std::string::npos);
  EXPECT_NE(text.find(R"(envcontract_check_failing{cause="too_few_devices",check="flagos-devices",)"
                      R"(env="torch-fl-xpu-py311",severity="required",status="fail"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(envcontract_check_failing{cause="image_mismatch",check="image",)"),
            std::string::npos);
  // The agent's own footprint, in the process collector's names: its RSS is
  // that of the process the test started.
  const auto gauge = [&](const std::string& name) {
    const auto at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size() + 2));
  };
  const double resident = gauge("process_resident_memory_bytes");
  EXPECT_GT(resident, 1e6) << text;
  EXPECT_LT(resident, 1e9) << text;
  EXPECT_GE(gauge("process_threads"), 2.0);
  // Its schedule, by which the shipped rules judge a scan late.
  EXPECT_EQ(gauge("envcontract_scan_interval_seconds"), 86400.0) << text;
  EXPECT_EQ(gauge("envcontract_scan_deadline_seconds"), 3600.0) << text;
  EXPECT_GE(gauge("process_open_fds"), 3.0);
  EXPECT_GE(gauge("process_cpu_seconds_total"), 0.0);
  const double started = gauge("process_start_time_seconds");
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(started, now - 600) << text;
  EXPECT_LE(started, now + 1) << text;

  if (!std::filesystem::exists("/usr/bin/promtool")) {
    GTEST_SKIP() << "promtool is not installed (package prometheus; scripts/test installs it)";
  }
  const auto file = dir.write("metrics.txt", text);
  const auto checked = run_command(
      {"/bin/sh", "-c", "exec /usr/bin/promtool check metrics < \"$1\"", "sh", file.string()});
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  EXPECT_EQ(checked.out + checked.err, "") << "promtool has lint findings";
}

}  // namespace
}  // namespace envcontract
