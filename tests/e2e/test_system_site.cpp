// A venv made with --system-site-packages imports torch from its base
// installation: the verdict must rest on that torch (a CUDA build there is a
// CUDA build, whatever the venv's own site-packages holds), and when the
// interpreter imports a module from somewhere the files do not lead (a
// sitecustomize moving sys.path), the env is never compliant on the files'
// word. A real base installation (the demo host's interpreter, linked), a
// real venv made by its `venv` module, scanned by the real binary.
#include <filesystem>
#include <fstream>

#include "common/json_text.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
namespace fs = std::filesystem;

// torch's identity, which the CUDA torch fails and the CPU one passes.
const std::string k_torch_check = R"(schema_version: 1
name: system-site
envs:
  require: any
checks:
  - id: torch-cpu
    kind: torch
    base: "2.10.0"
    cuda: none
)";

const std::string k_contract = k_torch_check + R"(  - id: no-cuda-libraries
    kind: files
    absent: ["{site}/torch/lib/libtorch_cuda.so"]
  - id: pins
    kind: distributions
    pins:
      torch: ">=2.10"
  - id: imports
    kind: imports
    modules: [torch, json]
)";

// Copies `from` to `to` as hard links (cheap; nothing linked is ever
// written), or as a copy where links cannot be made.
void link_tree(const fs::path& from, const fs::path& to) {
  if (run_command({"/bin/cp", "-al", from.string(), to.string()}).exit_code != 0) {
    fs::remove_all(to);
    const auto copy = run_command({"/bin/cp", "-a", from.string(), to.string()});
    ASSERT_EQ(copy.exit_code, 0) << copy.err;
  }
}

// A base installation with a CUDA torch in its own site-packages, and a
// venv over it that sees the system site packages.
struct SystemSiteHost {
  TempDir dir;
  fs::path base;
  fs::path base_site;
  fs::path venv;

  SystemSiteHost() {
    base = dir.path() / "base";
    link_tree(demo_host() / "opt/python3.10", base);
    base_site = base / "lib/python3.10/site-packages";
    const auto cuda_env =
        demo_host() / "miniconda3/envs/torch-fl-hf-test/lib/python3.10/site-packages";
    for (const char* name : {"torch", "torch-2.10.0+cu129.dist-info"}) {
      link_tree(cuda_env / name, base_site / name);
    }
    venv = dir.path() / "venv";
    const auto made = run_command({(base / "bin/python3.10").string(), "-m", "venv",
                                   "--system-site-packages", "--without-pip", venv.string()});
    EXPECT_EQ(made.exit_code, 0) << made.err;
  }

  Json scan(const std::string& contract_text, int expected_exit) const {
    return scan_prefix(dir.write("contract.yaml", contract_text), venv, expected_exit);
  }
};

std::string cause_of(const Json* check) {
  return check != nullptr && check->contains("diagnosis") && (*check)["diagnosis"].is_object()
             ? (*check)["diagnosis"]["cause"].get<std::string>()
             : "";
}

TEST(SystemSitePackages, TheBasesCudaTorchIsTheOneJudged) {
  const SystemSiteHost host;
  const auto env = host.scan(k_contract, 1);
  EXPECT_EQ(env["verdict"], "drift");
  EXPECT_EQ(cause_of(find_check(env, "torch-cpu")), "cuda_build");
  const auto* files = find_check(env, "no-cuda-libraries");
  ASSERT_NE(files, nullptr);
  EXPECT_EQ(cause_of(files), "forbidden_file");
  EXPECT_EQ((*files)["diagnosis"]["evidence"]["paths"][0],
            (host.base_site / "torch/lib/libtorch_cuda.so").string());
  // torch's dist-info sits in the base's site-packages: installed, not "missing".
  const auto* pins = find_check(env, "pins");
  ASSERT_NE(pins, nullptr);
  EXPECT_EQ((*pins)["status"], "pass") << *pins;
  EXPECT_EQ((*pins)["actual"]["torch"], "2.10.0+cu129");
  EXPECT_EQ((*find_check(env, "imports"))["status"], "pass");
  // Files and interpreter agree on where torch lives; json comes from the
  // standard library, which no site dir holds.
  EXPECT_FALSE(has_check(env, "env:search-path")) << env["checks"];
}

TEST(SystemSitePackages, AnImportTheFilesDoNotExplainIsNeverCompliant) {
  const SystemSiteHost host;
  // A CPU torch elsewhere, put first on sys.path by a sitecustomize: the
  // interpreter imports it, the files lead to the base's CUDA torch.
  const auto elsewhere = host.dir.path() / "elsewhere";
  fs::create_directories(elsewhere);
  link_tree(demo_host() / "miniconda3/envs/torch-fl-cpu/lib/python3.10/site-packages/torch",
            elsewhere / "torch");
  host.dir.write(
      "base/lib/python3.10/site-packages/sitecustomize.py",
      "import sys\nsys.path.insert(0, " + common::json_text(Json(elsewhere.string())) + ")\n");
  // Only checks that torch's own view passes: nothing else fails.
  const std::string contract = k_torch_check + R"(  - id: imports
    kind: imports
    modules: [torch]
)";
  const auto env = host.scan(contract, 2);
  const auto* disagreement = find_check(env, "env:search-path");
  ASSERT_NE(disagreement, nullptr) << env["checks"];
  EXPECT_EQ((*disagreement)["status"], "error");
  EXPECT_EQ(cause_of(disagreement), "facts_disagree");
  const auto& first = (*disagreement)["diagnosis"]["evidence"]["disagreements"][0];
  EXPECT_EQ(first["module"], "torch");
  EXPECT_EQ(first["interpreter"], (elsewhere / "torch/__init__.py").string());
  EXPECT_EQ(first["files"], (host.base_site / "torch").string());
  // The interpreter's own sys.path is the evidence.
  const auto& sys_path = (*disagreement)["diagnosis"]["evidence"]["interpreter_sys_path"];
  ASSERT_TRUE(sys_path.is_array());
  EXPECT_NE(std::find(sys_path.begin(), sys_path.end(), Json(elsewhere.string())), sys_path.end());
  // torch's own view (a CPU build) passes; the env is still not compliant.
  EXPECT_EQ((*find_check(env, "torch-cpu"))["status"], "pass");
  EXPECT_EQ(env["verdict"], "error");
}

// An interrupted upgrade leaves torch-2.1.2.dist-info beside
// torch-2.10.0+cu129.dist-info: which version pip or importlib.metadata
// reports depends on directory order, so a pin is never judged on either
// record alone.
TEST(SystemSitePackages, AStaleRecordBesideTheRealOneIsNamed) {
  const SystemSiteHost host;
  const auto stale = host.base_site / "torch-2.1.2.dist-info";
  fs::create_directories(stale);
  host.dir.write("base/lib/python3.10/site-packages/torch-2.1.2.dist-info/METADATA",
                 "Metadata-Version: 2.1\nName: torch\nVersion: 2.1.2\n");
  const std::string contract = R"(schema_version: 1
name: stale
envs:
  require: any
checks:
  - id: pins
    kind: distributions
    pins:
      torch: ">=2.10"
)";
  const auto env = host.scan(contract, 1);
  const auto* pins = find_check(env, "pins");
  ASSERT_NE(pins, nullptr) << env["checks"];
  EXPECT_EQ((*pins)["status"], "fail");
  EXPECT_EQ(cause_of(pins), "stale_distribution");
  const std::string summary = (*pins)["diagnosis"]["summary"];
  EXPECT_NE(summary.find("2.10.0+cu129"), std::string::npos) << summary;
  EXPECT_NE(summary.find("2.1.2"), std::string::npos) << summary;
  EXPECT_EQ((*pins)["diagnosis"]["evidence"]["records"].size(), 2U);
}

}  // namespace
}  // namespace envcontract
