// libFuzzer target: the bytes anyone who reaches the agent's port sends,
// read as request heads the way a connection reads them (in pieces, the
// bytes not taken given again with more), and an answer made of them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/http_wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envcontract::daemon;
  if (size == 0) {
    return 0;
  }
  // The first byte picks the piece size, as a client's writes would split it.
  const std::size_t step = 1 + data[0] % 64;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string pending;
  std::size_t offset = 0;
  // Requests one after another, as pipelined on one connection.
  for (int requests = 0; requests < 8; ++requests) {
    RequestHeadReader reader(4096);
    while (!reader.done() && reader.problem() == HeadProblem::none) {
      if (offset < bytes.size()) {
        pending.append(bytes.substr(offset, step));
        offset += step;
      } else if (pending.empty()) {
        return 0;
      }
      const std::size_t before = pending.size();
      const std::size_t taken = reader.add(pending);
      if (taken > before) {
        __builtin_trap();  // took bytes it was not given
      }
      pending.erase(0, taken);
      if (taken == 0 && offset >= bytes.size() && !reader.done()) {
        return 0;  // waits for bytes that never come
      }
    }
    if (reader.problem() != HeadProblem::none) {
      return 0;  // the connection is answered and closed
    }
    const auto& head = reader.head();
    (void)head.has_body();
    (void)answer_head(200, head.headers, pending.size(), head.keep_alive);
    if (accepts_gzip(head.header("Accept-Encoding"))) {
      (void)gzip({head.target, pending});
    }
  }
  return 0;
}
