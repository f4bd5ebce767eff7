// Dynamic probes on the demo host: each env's facts and failures as the demo
// host's README describes them.
#include "probes/dynamic_probe.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "common/json_text.hpp"
#include "discovery/discovery.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/probe_plans.hpp"

namespace envcontract::probes {
namespace {

using testing::torch_contract_plan;

using namespace std::chrono_literals;
using testing::demo_host;

struct Probed {
  PythonEnv env;
  DynamicFacts facts;
};

Probed probe(const std::string& relative_prefix, const ProbePlan& plan) {
  Probed probed;
  probed.env = discovery::describe_prefix(demo_host() / relative_prefix).value();
  probed.facts = probe_env(probed.env, activate(probed.env), plan);
  return probed;
}

const StageResult& stage(const DynamicFacts& facts, const std::string& name,
                         Activation activation = Activation::activated) {
  for (const auto& result : facts.stages) {
    if (result.stage == name && result.activation == activation) {
      return result;
    }
  }
  static const StageResult missing;
  ADD_FAILURE() << "no stage " << name;
  return missing;
}

const facts::ProbeRecord& import_record(const StageResult& stage, const std::string& module) {
  for (const auto& record : stage.records) {
    if (record.module == module) {
      return record;
    }
  }
  static const facts::ProbeRecord missing;
  ADD_FAILURE() << "no import record for " << module << " in "
                << common::json_text(facts::to_json(stage));
  return missing;
}

ProbePlan imports_plan(std::vector<std::string> modules) {
  ProbePlan plan = torch_contract_plan();
  plan.imports = std::move(modules);
  plan.compare_bare = false;
  return plan;
}

TEST(DynamicProbe, IdentityIsTorchsOwnView) {
  const auto probed = probe("miniconda3/envs/torch-fl-hf-test", imports_plan({}));
  const auto& identity = stage(probed.facts, "identity");
  ASSERT_EQ(identity.status, StageStatus::ok) << identity.summary;
  // The interpreter's sys.path, the import of torch (and where it was
  // found), then torch's own view.
  ASSERT_EQ(identity.records.size(), 3U);
  EXPECT_EQ(identity.records[0].type, "search_path");
  EXPECT_FALSE(identity.records[0].entries.empty());
  const auto& import = identity.records[1];
  EXPECT_EQ(import.module, "torch");
  EXPECT_TRUE(import.realpath.value_or("").ends_with("site-packages/torch/__init__.py"));
  const auto& torch = identity.records[2];
  EXPECT_EQ(torch.type, "torch");
  EXPECT_EQ(torch.version, "2.10.0+cu129");
  EXPECT_EQ(torch.cuda, "12.9");
  EXPECT_TRUE(torch.file.value_or("").ends_with("site-packages/torch/__init__.py"));
}

TEST(DynamicProbe, LibbkclImportErrorAndTheWarningThatDoesNotFail) {
  const auto probed =
      probe("miniconda3/envs/torch-fl-hf-test", imports_plan({"torch", "torch_fl", "torch_xmlir"}));
  const auto& imports = stage(probed.facts, "imports");
  EXPECT_EQ(imports.status, StageStatus::failed);
  EXPECT_EQ(imports.summary,
            "import torch_fl: ImportError: libbkcl.so: cannot open shared object file: No such "
            "file or directory");
  const auto& torch_fl = import_record(imports, "torch_fl");
  EXPECT_FALSE(torch_fl.ok);
  EXPECT_EQ(torch_fl.error_type, "ImportError");
  // torch_xmlir imports, but only after warning about the ABI break.
  const auto& xmlir = import_record(imports, "torch_xmlir");
  EXPECT_TRUE(xmlir.ok);
  ASSERT_EQ(xmlir.warnings.size(), 1U);
  EXPECT_NE(xmlir.warnings[0].find(
                "undefined symbol: _ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib"),
            std::string::npos);
}

TEST(DynamicProbe, SameLibbkclFailureInTheXpuPy310Env) {
  const auto probed = probe("miniconda3/envs/torch-fl-xpu-py310", imports_plan({"torch_fl"}));
  EXPECT_EQ(stage(probed.facts, "imports").summary,
            "import torch_fl: ImportError: libbkcl.so: cannot open shared object file: No such "
            "file or directory");
}

TEST(DynamicProbe, VendorBindingNeedsTheNextRuntimeMajor) {
  const auto probed = probe("miniconda3/envs/torch-xpu-py310", imports_plan({"torch_xmlir"}));
  EXPECT_EQ(stage(probed.facts, "imports").summary,
            "import torch_xmlir: ImportError: libxpurt.so.2: cannot open shared object file: No "
            "such file or directory");
}

TEST(DynamicProbe, UndefinedTriuSymbolInTheVenv) {
  const auto probed = probe("venvs/xpu210v", imports_plan({"torch_xmlir"}));
  const auto& imports = stage(probed.facts, "imports");
  EXPECT_EQ(imports.status, StageStatus::failed);
  EXPECT_NE(imports.summary.find(
                "undefined symbol: _ZN2at4_ops5triu_10redispatchEN3c1014DispatchKeySetERNS_"
                "6TensorEl"),
            std::string::npos)
      << imports.summary;
}

TEST(DynamicProbe, HealthyLookingEnvHasZeroDevices) {
  auto plan = imports_plan({"torch", "torch_fl", "triton"});
  plan.devices.push_back({"flagos", "torch_fl.flagos.device_count()", {"torch_fl"}, 30s});
  const auto probed = probe("miniconda3/envs/torch-fl-xpu-py311", plan);
  EXPECT_EQ(stage(probed.facts, "imports").status, StageStatus::ok);
  const auto& devices = stage(probed.facts, "devices:flagos");
  ASSERT_EQ(devices.status, StageStatus::ok) << devices.summary;
  EXPECT_EQ(devices.records.back().value, 0);
}

TEST(DynamicProbe, FirstDeviceOpSpinsInXpuWait) {
  auto plan = imports_plan({"torch", "torch_fl", "triton"});
  plan.devices.push_back({"flagos", "torch_fl.flagos.device_count()", {"torch_fl"}, 30s});
  plan.smokes.push_back(
      {"first-op", "import torch_fl\ntorch_fl.flagos.embedding([1, 2, 3])\n", 2s});
  const auto probed = probe("miniconda3/envs/torch-fl-cpu", plan);
  EXPECT_EQ(stage(probed.facts, "imports").status, StageStatus::ok);
  EXPECT_EQ(stage(probed.facts, "devices:flagos").records.back().value, 8);

  const auto& smoke = stage(probed.facts, "smoke:first-op");
  ASSERT_EQ(smoke.status, StageStatus::hung) << smoke.summary;
  ASSERT_TRUE(smoke.hang.has_value());
  const auto& hang = *smoke.hang;
  EXPECT_EQ(hang.classification, "spin");
  EXPECT_EQ(hang.threads.size(), 66U);
  EXPECT_TRUE(hang.summary.starts_with("1 of 66 threads running at ~")) << hang.summary;
  EXPECT_NE(hang.summary.find("% CPU in xpu_wait (libxpurt.so.1); 65 parked in futex wait"),
            std::string::npos)
      << hang.summary;
  ASSERT_FALSE(hang.native_stack.empty()) << hang.native_stack_problem;
  EXPECT_EQ(hang.native_stack[0].function, "xpu_wait");
  EXPECT_EQ(hang.native_stack[0].library, "libxpurt.so.1");
  // Python's view of the same moment: the snippet inside torch_fl's embedding.
  EXPECT_NE(hang.python_stacks.find("in embedding"), std::string::npos) << hang.python_stacks;
  EXPECT_NE(hang.python_stacks.find("<smoke>"), std::string::npos) << hang.python_stacks;
}

TEST(DynamicProbe, WorksOnlyWhenActivated) {
  auto plan = imports_plan({"torch", "torch_fl"});
  plan.compare_bare = true;
  const auto probed = probe("miniconda3/envs/torch-fl-activate", plan);
  EXPECT_EQ(stage(probed.facts, "imports").status, StageStatus::ok);
  EXPECT_EQ(stage(probed.facts, "imports", Activation::bare).status, StageStatus::failed);
  ASSERT_EQ(probed.facts.artifacts.size(), 1U);
  const auto& artifact = probed.facts.artifacts[0];
  EXPECT_EQ(artifact.stage, "imports");
  EXPECT_EQ(artifact.bare, StageStatus::failed);
  EXPECT_EQ(artifact.activated, StageStatus::ok);
  EXPECT_EQ(artifact.summary,
            "works only when activated: without activation, import torch_fl: ImportError: "
            "libxpu_fl_runtime.so: cannot open shared object file: No such file or directory");
}

TEST(DynamicProbe, NoArtifactWhenAnEnvFailsEitherWay) {
  auto plan = imports_plan({"torch_fl"});
  plan.compare_bare = true;
  const auto probed = probe("miniconda3/envs/torch-fl-xpu-py310", plan);
  EXPECT_TRUE(probed.facts.artifacts.empty());
  EXPECT_EQ(stage(probed.facts, "imports", Activation::bare).status, StageStatus::failed);
}

TEST(DynamicProbe, LaterStagesAreSkippedWhenTorchDoesNotImport) {
  auto plan = imports_plan({"torch"});
  plan.smokes.push_back({"op", "import torch\nprint(1)", 10s});
  // A snippet that never imports torch does not need it: it runs.
  plan.smokes.push_back({"arithmetic", "print(6 * 7)", 10s});
  const auto probed = probe("miniconda3", plan);
  EXPECT_EQ(stage(probed.facts, "identity").status, StageStatus::failed);
  const auto& smoke = stage(probed.facts, "smoke:op");
  EXPECT_EQ(smoke.status, StageStatus::skipped);
  EXPECT_EQ(smoke.summary, "skipped: torch does not import in this env");
  const auto& arithmetic = stage(probed.facts, "smoke:arithmetic");
  EXPECT_EQ(arithmetic.status, StageStatus::ok) << arithmetic.summary;
  ASSERT_FALSE(arithmetic.records.empty());
  EXPECT_EQ(arithmetic.records.back().output, "42\n");
}

// Nothing in the plan needs torch: it is never imported.
TEST(DynamicProbe, APlanThatNeedsNoTorchNeverImportsIt) {
  ProbePlan plan;
  plan.smokes.push_back({"arithmetic", "print(6 * 7)", 10s});
  plan.devices.push_back({"cores", "os.cpu_count()", {"os"}, 10s});
  const auto probed = probe("miniconda3", plan);
  for (const auto& stage : probed.facts.stages) {
    EXPECT_NE(stage.stage, "identity");
    EXPECT_EQ(stage.status, StageStatus::ok) << stage.stage << ": " << stage.summary;
  }
  EXPECT_EQ(probed.facts.stages.size(), 2U);
}

// The first job ends only once the two others have: with two workers,
// the third job must start while the first still runs.
TEST(RunConcurrently, ASlowJobDoesNotHoldBackTheOthers) {
  std::mutex mutex;
  std::condition_variable others_done;
  std::vector<std::size_t> finished;
  bool waited_out = false;
  run_concurrently(3, 2, [&](std::size_t index) {
    std::unique_lock lock(mutex);
    if (index == 0) {
      waited_out = !others_done.wait_for(lock, 20s, [&] { return finished.size() == 2; });
    }
    finished.push_back(index);
    others_done.notify_all();
  });
  EXPECT_FALSE(waited_out) << "the other jobs waited for the slow one";
  EXPECT_EQ(finished, (std::vector<std::size_t>{1, 2, 0}));
}

// A job that throws on a worker thread would end the process: the others
// run, and the exception reaches the caller once they have.
TEST(RunConcurrently, AJobThatThrowsLeavesTheOthersRunAndReachesTheCaller) {
  std::atomic<int> ran{0};
  EXPECT_THROW(run_concurrently(6, 3,
                                [&](std::size_t index) {
                                  if (index == 1) {
                                    throw std::runtime_error("job 1 failed");
                                  }
                                  std::this_thread::sleep_for(20ms);
                                  ++ran;
                                }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 5);
}

// With no thread to spare (a unit's task limit reached), the caller does
// every job itself. RLIMIT_NPROC binds a user that is not root: tried in a
// child process that becomes nobody.
TEST(RunConcurrently, WithNoThreadToSpareTheCallerDoesEveryJob) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "skipped: needs root to become another user";
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A lock another thread of this test process held at the fork would
    // hang the child: bounded, never the whole test run.
    ::alarm(10);
    const rlimit one{1, 1};
    if (::setgid(65534) != 0 || ::setuid(65534) != 0 || ::setrlimit(RLIMIT_NPROC, &one) != 0) {
      ::_exit(3);
    }
    int ran = 0;
    bool other_thread = false;
    const auto caller = std::this_thread::get_id();
    try {
      run_concurrently(4, 4, [&](std::size_t) {
        ++ran;
        other_thread = other_thread || std::this_thread::get_id() != caller;
      });
    } catch (...) {
      ::_exit(4);
    }
    ::_exit(ran == 4 && !other_thread ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed (SIGALRM: it hung)";
  if (WEXITSTATUS(status) == 3) {
    GTEST_SKIP() << "skipped: cannot become nobody (uid 65534) here";
  }
  EXPECT_EQ(WEXITSTATUS(status), 0) << "4: it threw; 5: a job was lost or ran elsewhere";
}

}  // namespace
}  // namespace envcontract::probes
