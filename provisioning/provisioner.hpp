#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "process/cancellation.hpp"
#include "process/process_runner.hpp"
#include "process/run_as.hpp"
#include "provisioning/provision_steps.hpp"

// Builds a new env from the contract's recipe, beside the others and never
// over one, with every step run as the provisioning user (never root).
namespace envcontract::provisioning {

struct ProvisionSettings {
  std::filesystem::path envs_dir;  // new envs are made here
  // Who runs the steps when the agent is root; an unprivileged agent runs
  // them as itself. Root is refused.
  std::string user;
  bool remove_on_failure = false;  // else the half-built env is kept, marked failed
  std::vector<std::filesystem::path> python_dirs = {"/usr/local/bin", "/usr/bin"};
  std::chrono::milliseconds step_timeout{30 * 60 * 1000};
  std::size_t max_output_bytes = 1024 * 1024;  // per stream and step
  process::ResourceLimits resources;           // per step's process tree
  const process::Cancellation* cancellation = nullptr;
};

// The file a failed provision leaves in the env it did not finish.
inline constexpr const char* k_failed_marker = ".envcontract-provision-failed";

struct PreparedProvision {
  ProvisionTarget target;
  std::filesystem::path prefix;
  facts::RunAs run_as;
  std::optional<process::Credentials> credentials;  // unset: the agent's own
  std::vector<ProvisionStep> steps;
  // The venv route makes the prefix itself first, exclusively, under the
  // lock: nothing that appears there meanwhile (a link) is built through.
  bool make_prefix_first = false;
};

// Why `user` may not provision, or "": root, or a member of root's group.
std::string provisioning_user_problem(const facts::RunAs& user);

// Everything decided before anything runs: the name, the prefix (which must
// not exist), the user, the base interpreter and the steps. The dry run
// prints this; an error says what to change.
common::Result<PreparedProvision> prepare_provision(const contracts::ProvisionRecipe& recipe,
                                                    const std::string& name,
                                                    const ProvisionSettings& settings);

struct StepOutcome {
  std::string step;
  std::string command;      // as a person would type it
  std::string status;       // ok, failed, not_run
  std::string process;      // "exit 0", "exit 1", "timed out after ..."
  std::string output_tail;  // the end of what it printed (stdout, then stderr)
  std::chrono::milliseconds duration{0};
};

struct ProvisionOutcome {
  bool ok = false;
  std::filesystem::path prefix;
  std::string user;
  std::vector<StepOutcome> steps;
  std::string error;        // why it stopped, or ""
  std::string left_behind;  // "", "removed", or "kept, marked failed (...)"
};

struct ProvisionProgress {
  std::function<void(std::size_t index, std::size_t count, const ProvisionStep& step)> started;
  std::function<void(std::size_t index, std::size_t count, const StepOutcome& outcome)> finished;
};

// Runs the steps in order under a lock on the env's name (a second provision
// of the same name is refused while one runs). A failed step stops the run:
// the env is removed or marked failed, as configured.
ProvisionOutcome run_provision(const PreparedProvision& prepared, const ProvisionSettings& settings,
                               const ProvisionProgress& progress = {});

nlohmann::ordered_json to_json(const StepOutcome& outcome);
nlohmann::ordered_json to_json(const ProvisionOutcome& outcome);

// Holds the lock of one env name while it lives: flock on ".NAME.lock" in
// the envs directory, opened with `as`'s filesystem credentials when set
// (the directory is the provisioning user's: root never opens a file there
// that the user could have pointed elsewhere). `held()` is false when
// another process holds it.
class NameLock {
 public:
  NameLock(const std::filesystem::path& envs_dir, const std::string& name,
           const facts::RunAs* as = nullptr);
  ~NameLock();
  NameLock(const NameLock&) = delete;
  NameLock& operator=(const NameLock&) = delete;
  bool held() const { return m_fd >= 0; }
  const std::string& problem() const { return m_problem; }

 private:
  int m_fd = -1;
  std::string m_problem;
};

}  // namespace envcontract::provisioning
