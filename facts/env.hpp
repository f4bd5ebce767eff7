#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

// One Python environment as discovery finds it on disk, and who its code
// runs as: facts that probes write and judges read (docs/probes.md).
namespace envcontract::facts {

using Json = nlohmann::ordered_json;

enum class EnvKind {
  conda,        // a prefix with conda-meta/
  venv,         // a prefix with pyvenv.cfg (python -m venv, virtualenv, poetry, uv)
  interpreter,  // a plain Python installation, such as a pyenv version
};

std::string to_string(EnvKind kind);

// The credentials one env's code runs under.
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, as initgroups would give
  std::string user;           // the name, or the numeric uid when it has no passwd entry
  std::filesystem::path home = "/";
  std::string shell = "/bin/sh";
  // Why this user: "owner of the env", "root-owned env: configured user",
  // "root by configuration", "the agent is not root".
  std::string reason;
  // Chosen for a root-owned env of the host by run_root_envs_as (its reason
  // says which way); not for an image tree's env, whose owner means nothing here.
  bool for_root_owned_env = false;
  // When set, no env code may run: why (e.g. the configured user does not exist).
  std::string problem;
  // True when the agent can change to these credentials, i.e. it runs as
  // root; an unprivileged agent runs everything as itself.
  bool switch_credentials = false;
  // A uid reserved for this env alone (run_root_envs_as: dynamic): nobody
  // else's code runs as it, so whoever can change the env gains nothing by
  // having their code run as it that they did not have already.
  bool own_uid = false;

  bool is_root() const { return uid == 0; }
  // For people: the user's name, or "uid N" for a uid without one (a
  // root-owned env's own uid, an unpacked archive's owner).
  std::string who() const {
    const bool numeric = !user.empty() && user.find_first_not_of("0123456789") == std::string::npos;
    return numeric ? "uid " + user : user;
  }
};

struct UnsafePath {
  std::filesystem::path path;
  std::string owner;  // user name or uid
  std::string group;  // group name or gid
  unsigned mode = 0;  // permission bits, e.g. 0777
  std::string why;    // "writable by everyone", "owned by alice", ...
};

// A file the agent refused to read, and why.
struct FileProblem {
  std::filesystem::path path;
  std::string problem;
};

// How the code of an env inside a container target reaches it: the argv
// that runs a command inside the container (discovery/exec_prefix.hpp).
struct ExecPrefix {
  std::string target;             // the container target's name
  std::vector<std::string> argv;  // "docker exec ...", "nsenter ...", "bwrap ..."
  // The argv holds {uid} and {gid}: it runs as the agent and switches to the
  // env's user inside (docker --user, nsenter --setuid). Otherwise it runs
  // as the env's user itself (bwrap).
  bool switches_user = false;
  // A runtime's own exec (docker, podman): the command runs under the
  // runtime, confined as the container is.
  bool runtime_client = false;
  // A process of the container, when one is known, and its start time (in
  // clock ticks since boot, /proc/PID/stat) when it was chosen: a probe's
  // private directory is made in that process's root (/proc/PID/root), so
  // it is on the filesystem the probe sees (a tmpfs /tmp, a volume) and not
  // in the runtime's storage (read-only under the shipped unit), and only
  // while the PID is still that process. 0: the target's root.
  pid_t root_process = 0;
  std::uint64_t root_process_start = 0;
  bool empty() const { return argv.empty(); }
};

// What is wrong with an env's prefix itself, as discovery and its reading
// found it. The judge acts on its kind; people read its text (the report
// lists the texts).
struct EnvProblem {
  enum class Kind {
    no_interpreter,   // bin/python is missing, a dangling link or a loop of links
    user_mount,       // it holds a filesystem a user's process serves: none of it is read
    unreadable,       // the user it is read as cannot read it: nothing of it is known
    unknown_version,  // nothing tells its Python version (its interpreter may still run)
  };
  Kind kind;
  std::string text;
};

// The problems' texts, in order: what the report shows of them.
std::vector<std::string> problem_texts(const std::vector<EnvProblem>& problems);

// One Python environment a user of the host could run, as found on disk.
struct PythonEnv {
  std::string name;              // conda env name, venv dir name, "base" for a conda root
  std::filesystem::path prefix;  // canonical: symlinks resolved
  EnvKind kind = EnvKind::conda;
  std::filesystem::path python;  // the interpreter a user would run: prefix/bin/python
  std::string python_version;    // "3.10.13", or "3.10" when only the lib dir tells
  // How the env's records disagree with its interpreter, whose version
  // python_version is ("conda-meta/python-3.11.7-h955ad1f_0.json says Python
  // 3.11.7, but bin/python -> python3.10 is Python 3.10"), or "".
  std::string python_version_conflict;
  std::string owner;                  // user name owning the prefix, or its numeric uid
  std::vector<std::string> found_by;  // how discovery reached it
  std::vector<EnvProblem> problems;   // what is wrong with the prefix itself
  RunAs run_as;                       // whose credentials its code runs with
  // Whose credentials the agent reads its files with on the host, when not
  // run_as's: a container's env, whose owner is a uid the image chose. Read
  // as that uid on the host, a link in the container to a host user's
  // private file (the kernel follows an absolute link from the host's "/")
  // would put that file in the report; read as a uid of its own, only what
  // anyone may read is reached.
  std::optional<RunAs> read_as;
  const RunAs& reader() const { return read_as ? *read_as : run_as; }
  // Paths others could write: while any is listed, none of its code runs.
  std::vector<UnsafePath> unsafe;
  // Whether what its interpreter imports from was held to the same rule
  // (probes/import_safety.hpp); the dynamic probes check it first when not.
  bool imports_checked = false;
  // Why not all of it could be checked (a bound reached, the search path
  // unreadable), or "": while set, none of its code runs.
  std::string imports_unchecked;
  // Files discovery would not read (a FIFO for pyvenv.cfg, a 60,000-digit version).
  std::vector<FileProblem> refused_files;
  // A filesystem served by a user's process inside the prefix
  // (process/mount_table.hpp): when set, nothing of the env is read or run.
  std::filesystem::path user_mount;
  // The operating system tree it belongs to (process/system_root.hpp): "/",
  // or the container rootfs scanned with --root that it lies in; a
  // contract's absolute paths, PATH and device nodes are read there.
  std::filesystem::path system_root = "/";
  // Set for an env of a container target: its activation and probes run
  // inside the container through this prefix (empty: on the agent's host).
  ExecPrefix exec;
};

// Why none of an env's code may run. The judge acts on its kind (the cause
// of the env's `env:code-safety` check); people read its text.
struct CodeRefusal {
  enum class Kind {
    run_as_unavailable,  // the user it would run as cannot be had
    unsafe_permissions,  // others could write what it would run
    imports_unchecked,   // what its interpreter imports could not all be checked
    // As root through nsenter or a command line: outside its container's
    // seccomp profile, device cgroup and capability bounds, that is the host.
    unconfined_root,
  };
  Kind kind;
  std::string text;  // "none of this env's code runs: ..."
};

// Why none of `env`'s code may run, from its facts alone; nullopt when it may.
std::optional<CodeRefusal> code_refusal(const PythonEnv& env);

// `path`, as the agent names it, as the processes of the tree `root` (an
// env's system_root) name it: without the root's part. Unchanged when the
// root is the host's ("/" or empty) or the path is not under it.
std::string path_inside_root(const std::filesystem::path& root, const std::string& path);

// Something discovery could not use, e.g. a stale environments.txt entry.
struct DiscoveryProblem {
  std::filesystem::path path;
  std::string problem;
};

// "0755": permission bits as people write them.
std::string mode_text(unsigned mode);

Json to_json(const RunAs& run_as);
Json to_json(const UnsafePath& unsafe);
Json to_json(const FileProblem& problem);
Json to_json(const PythonEnv& env);

}  // namespace envcontract::facts
