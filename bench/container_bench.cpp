// A scan of a running container's envs through its engine's own exec, against
// the same scan through nsenter into the same container (the baseline: the
// agent's own cost, with no engine client in the way), for each engine that
// runs here: Debian's podman, and docker.io's dockerd (one of the
// benchmark's own). Target (issue 48): the engine's exec within 1.5x of
// nsenter.
//
// usage: container_bench ENVCONTRACTD [ROUNDS]   (exit 77: no engine runs here)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/report_only.hpp"
#include "tests/support/container_engine.hpp"
#include "tests/support/container_rootfs.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/system_venv.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using envcontract::testing::Engine;

constexpr double k_target_ratio = 1.5;

// A venv over the container's python3 with a torch as far as the probes ask.
void make_env(const fs::path& prefix) {
  const auto site =
      envcontract::testing::system_venv_site(envcontract::testing::make_system_venv(prefix));
  fs::create_directories(site / "torch");
  std::ofstream(site / "torch/__init__.py") << "from . import version\n"
                                               "__version__ = version.__version__\n";
  std::ofstream(site / "torch/version.py") << "__version__ = '2.10.0'\ncuda = None\nhip = None\n";
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

struct Measured {
  bool ran = false;
  bool met = false;
  std::string problem;
};

// The two ways in, `rounds` scans each, alternated so that a slower moment
// of a shared machine falls on both.
Measured measure(Engine engine, const std::string& agent, int rounds) {
  envcontract::testing::TempDir dir;
  envcontract::testing::open_to_all(dir.path());
  envcontract::testing::EngineSession session(engine, dir.path() / "engine");
  const std::string name = session.name();
  if (!session.unavailable().empty()) {
    std::printf("%s: cannot run here: %s\n", name.c_str(), session.unavailable().c_str());
    return {false, false, session.unavailable()};
  }
  const fs::path rootfs = dir.path() / "rootfs";
  make_env(rootfs / "opt/venvs/app");
  make_env(rootfs / "opt/venvs/tools");
  if (const auto why = envcontract::testing::make_container_rootfs(rootfs); !why.empty()) {
    return {false, false, why};
  }
  envcontract::testing::run_command({"/bin/chmod", "-R", "a+rX", rootfs.string()});
  envcontract::testing::EngineContainer container(
      session, rootfs,
      {"/usr/bin/python3", "-c",
       "import signal, time\nsignal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
       "while True: time.sleep(3600)\n"},
      dir.path() / "scratch");
  if (!container.problem().empty()) {
    return {false, false, container.problem()};
  }
  fs::create_directories(dir.path() / "host");
  const auto contract =
      dir.write("contract.yaml",
                "schema_version: 1\n"
                "targets:\n"
                "  - {name: ci, image: " +
                    container.image() +
                    "}\n"
                    "checks:\n"
                    "  - {id: torch, kind: torch, base: '2.10.0'}\n"
                    "  - {id: os, kind: command,\n"
                    "     run: 'read -r line < /etc/os-release; echo \"$line\"'}\n"
                    "  - {id: smoke, kind: smoke, code: 'print(6 * 7)',\n"
                    "     expect_output: '^42'}\n");
  const std::string entry =
      "  - {name: box, container: " + container.name() + ", env_roots: [/opt/venvs], ";
  const auto through_exec =
      dir.write("exec.yaml", "containers:\n" + entry + "exec: " + name + "}\n");
  const auto through_nsenter = dir.write(
      "nsenter.yaml", "containers:\n" + entry + "exec: nsenter, runtime: " + name + "}\n");

  std::vector<double> exec_ms;
  std::vector<double> nsenter_ms;
  for (int round = 0; round < rounds; ++round) {
    for (const auto& [file, times] :
         {std::pair{through_exec, &exec_ms}, std::pair{through_nsenter, &nsenter_ms}}) {
      const auto start = std::chrono::steady_clock::now();
      const auto result = envcontract::testing::run_command(session.with_environment(
          {agent, "scan", "--contract", contract.string(), "--format", "json", "--root",
           (dir.path() / "host").string(), "--containers", file.string()}));
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      // A wrong result is no figure: both envs must comply.
      if (result.exit_code != 0) {
        std::printf("%s: scan through %s exited %d:\n%s\n", name.c_str(), file.c_str(),
                    result.exit_code, (result.err + result.out.substr(0, 4000)).c_str());
        return {true, false, "a scan failed"};
      }
      times->push_back(ms);
    }
  }
  const double exec = median(exec_ms);
  const double nsenter = median(nsenter_ms);
  const double ratio = nsenter > 0 ? exec / nsenter : 0;
  const bool met = ratio <= k_target_ratio;
  std::printf("%s: exec %.1f ms, nsenter %.1f ms (medians of %d), ratio %.2fx\n", name.c_str(),
              exec, nsenter, rounds, ratio);
  bench_row("scan of a running container's 2 envs through " + name + " exec",
            bench_figure(exec, 0, " ms"), "nsenter into it: " + bench_figure(nsenter, 0, " ms"),
            bench_figure(ratio, 2, "x"), "within 1.5x", met);
  return {true, met, ""};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: container_bench ENVCONTRACTD [ROUNDS]\n");
    return 2;
  }
  const std::string agent = argv[1];
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  bool any = false;
  bool missed = false;
  bool failed = false;
  std::string why;
  for (const Engine engine : {Engine::podman, Engine::docker}) {
    const Measured measured = measure(engine, agent, rounds);
    if (!measured.ran) {
      why += (why.empty() ? "" : "; ") + envcontract::testing::engine_name(engine) + ": " +
             measured.problem;
      continue;
    }
    any = true;
    failed = failed || !measured.problem.empty();
    missed = missed || !measured.met;
  }
  if (failed) {
    return 2;
  }
  if (!any) {
    std::printf("skipped: no container engine runs here (%s)\n", why.c_str());
    return 77;
  }
  return missed ? bench_missed("an engine's exec is more than 1.5x nsenter's time") : 0;
}
