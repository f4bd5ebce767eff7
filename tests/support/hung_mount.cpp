#include "tests/support/hung_mount.hpp"

#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/background_process.hpp"

namespace envcontract::testing {
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

HungMount::HungMount(const fs::path& mount_point, uid_t user_id, bool take_requests)
    : m_mount_point(mount_point) {
  const fs::path log = mount_point.string() + ".server.log";
  std::vector<std::string> argv = {"/usr/bin/python3",
                                   ENVCONTRACT_SOURCE_DIR "/tests/support/hung_fuse.py",
                                   mount_point.string(), std::to_string(user_id)};
  if (take_requests) {
    argv.push_back("--take-requests");
  }
  m_server = spawn_logged(argv, log);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < end) {
    const std::string said = read_text(log);
    if (said.find("mounted") != std::string::npos) {
      return;
    }
    if (said.find("failed") != std::string::npos || ::waitpid(m_server, nullptr, WNOHANG) > 0) {
      m_server = -1;
      throw std::runtime_error("cannot mount a hung FUSE filesystem: " + said);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  release();
  throw std::runtime_error("the hung FUSE server did not say it mounted");
}

HungMount::~HungMount() {
  release();
}

void HungMount::release() {
  if (m_server <= 0) {
    return;
  }
  ::umount2(m_mount_point.c_str(), MNT_DETACH);
  ::kill(-m_server, SIGKILL);
  ::waitpid(m_server, nullptr, 0);
  m_server = -1;
}

std::string HungMount::unavailable() {
  if (::geteuid() != 0) {
    return "mounting a FUSE filesystem needs root";
  }
  if (::access("/dev/fuse", R_OK | W_OK) != 0) {
    return "there is no usable /dev/fuse";
  }
  return "";
}

}  // namespace envcontract::testing
