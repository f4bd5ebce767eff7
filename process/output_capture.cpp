#include "process/output_capture.hpp"

#include <algorithm>

namespace envcontract::process {

void OutputCapture::append(std::string_view data) {
  m_total += data.size();
  const std::size_t to_head = std::min(data.size(), m_half - m_head.size());
  m_head.append(data.substr(0, to_head));
  data.remove_prefix(to_head);
  if (data.empty() || m_half == 0) {
    return;
  }
  if (data.size() >= m_half) {
    m_tail.assign(data.substr(data.size() - m_half));
    m_tail_start = 0;
    return;
  }
  // The tail is a ring once full: overwrite its oldest bytes in chunks.
  while (!data.empty()) {
    if (m_tail.size() < m_half) {
      const std::size_t fill = std::min(data.size(), m_half - m_tail.size());
      m_tail.append(data.substr(0, fill));
      data.remove_prefix(fill);
      continue;
    }
    const std::size_t chunk = std::min(data.size(), m_half - m_tail_start);
    m_tail.replace(m_tail_start, chunk, data.substr(0, chunk));
    m_tail_start = (m_tail_start + chunk) % m_half;
    data.remove_prefix(chunk);
  }
}

std::string OutputCapture::text() const {
  std::string tail = m_tail.substr(m_tail_start) + m_tail.substr(0, m_tail_start);
  const std::size_t kept = m_head.size() + tail.size();
  if (kept == m_total) {
    return m_head + tail;
  }
  return m_head + "\n[... " + std::to_string(m_total - kept) + " bytes omitted ...]\n" + tail;
}

}  // namespace envcontract::process
