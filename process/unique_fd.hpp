#pragma once

#include <unistd.h>

namespace envcontract::process {

// Owns a file descriptor: closed when the owner goes, whether it goes by a
// return or by an exception, so an allocation or an event loop's refusal
// between opening and handing the descriptor on leaks nothing. Hand one to
// an owner that takes it only on success (asio's assign) by `get()`, then
// `release()` once it has.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : m_fd(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : m_fd(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return m_fd; }
  explicit operator bool() const noexcept { return m_fd >= 0; }
  // Gives the descriptor up without closing it.
  int release() noexcept {
    const int fd = m_fd;
    m_fd = -1;
    return fd;
  }
  void reset(int fd = -1) noexcept {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    m_fd = fd;
  }

 private:
  int m_fd = -1;
};

}  // namespace envcontract::process
