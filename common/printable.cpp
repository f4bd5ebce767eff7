#include "common/printable.hpp"

#include <cstdio>

namespace envcontract::common {

namespace {

unsigned char byte_at(const std::string& text, std::size_t i) {
  return i < text.size() ? static_cast<unsigned char>(text[i]) : 0;
}

// How many bytes at `i` are a character a terminal acts on rather than
// shows, when written as UTF-8: the C1 controls (U+0080-U+009F: 0x9b is
// CSI, as ESC [ is) and the bidirectional overrides and isolates
// (U+202A-U+202E, U+2066-U+2069), which reorder what is shown after them.
// 0 for anything else.
std::size_t hidden_control(const std::string& text, std::size_t i) {
  const unsigned char first = byte_at(text, i);
  const unsigned char second = byte_at(text, i + 1);
  const unsigned char third = byte_at(text, i + 2);
  if (first == 0xc2 && second >= 0x80 && second <= 0x9f) {
    return 2;
  }
  if (first == 0xe2 && ((second == 0x80 && third >= 0xaa && third <= 0xae) ||
                        (second == 0x81 && third >= 0xa6 && third <= 0xa9))) {
    return 3;
  }
  return 0;
}

void escape(unsigned char byte, std::string& out) {
  char escaped[8];
  std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
  out += escaped;
}

}  // namespace

std::string printable(const std::string& text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (const std::size_t control = hidden_control(text, i); control > 0) {
      for (std::size_t k = 0; k < control; ++k) {
        escape(byte_at(text, i + k), out);
      }
      i += control - 1;
    } else if ((byte < 0x20 && !(keep_newlines && byte == '\n')) || byte == 0x7f) {
      escape(byte, out);
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace envcontract::common
