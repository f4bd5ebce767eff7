#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "facts/env.hpp"

// bin/python followed link by link, as the kernel follows it where the
// env's code runs: what the interpreter really is (a half-finished upgrade
// leaves conda-meta saying 3.11 while bin/python still leads to python3.10),
// and, when the chain breaks, every link up to the path that is missing.
namespace envcontract::discovery {

struct InterpreterLinks {
  // env.python first, then where each link leads, as the agent names them.
  std::vector<std::filesystem::path> chain;
  // What each link says, as `ls -l` shows it: one fewer than chain.
  std::vector<std::string> written;
  // The last path of the chain as the env's own processes name it.
  std::string last_inside;
  bool missing = false;  // the last path of the chain does not exist
  bool loop = false;     // more links than the kernel follows (40)
  int unreadable = 0;    // errno when a path of the chain could not be read
  bool regular = false;  // the chain ends at a regular file

  // "bin/python -> python3.10 -> /opt/gone/bin/python3.10": each link as it
  // is written, the first path named relative to the prefix.
  std::string text(const std::filesystem::path& prefix) const;
  // "3.10" when the regular file the chain ends at is named pythonX.Y (how
  // CPython, conda, Debian and pyenv install their interpreters), else "".
  std::string python_version() const;
};

// "3.10" from "python3.10" (or "python3.13t", free-threaded); "" when the
// name is not pythonX.Y.
std::string python_version_in_name(const std::string& name);

// The links of env.python, read as env.reader() (setfsuid): a link into a
// directory only root may enter, or to another user's process under /proc,
// is unreadable to it and named no further. Inside a container target, an
// absolute link starts again at the container's "/"; an env of the host or
// of a --root tree runs on the host, where the kernel follows it as the
// host's.
InterpreterLinks follow_interpreter_links(const facts::PythonEnv& env);

}  // namespace envcontract::discovery
