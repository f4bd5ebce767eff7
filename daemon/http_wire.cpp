#include "daemon/http_wire.hpp"

#include <zlib.h>

#include <algorithm>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>
#include <cctype>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace envcontract::daemon {

namespace http = boost::beast::http;

namespace {

// httplib's bound, which clients of the agent have met so far.
constexpr std::size_t k_max_target_bytes = 8192;

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

}  // namespace

std::string RequestHead::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (equal_ignoring_case(key, name)) {
      return value;
    }
  }
  return {};
}

std::size_t RequestHead::header_count(std::string_view name) const {
  return static_cast<std::size_t>(
      std::count_if(headers.begin(), headers.end(),
                    [&](const auto& field) { return equal_ignoring_case(field.first, name); }));
}

bool RequestHead::has_body() const {
  return body_follows || header_count("Transfer-Encoding") > 0 ||
         header_count("Content-Length") > 1 ||
         (header_count("Content-Length") == 1 && header("Content-Length") != "0");
}

// Beast's parser of a head, writing straight into the RequestHead: the
// fields past k_max_header_fields are counted and dropped (a head of 128 KiB
// may hold 30,000 empty fields). The body is never read (a connection whose
// request has one is not reused), so none is bounded or kept.
struct RequestHeadReader::Parser final : http::basic_parser<true> {
  explicit Parser(RequestHead& head_) : head(head_) {}

  void on_request_impl(http::verb, boost::beast::string_view method,
                       boost::beast::string_view target, int version,
                       boost::beast::error_code&) override {
    head.method.assign(method.data(), method.size());
    head.target.assign(target.data(), target.size());
    head.http_1_1 = version >= 11;
  }
  void on_response_impl(int, boost::beast::string_view, int, boost::beast::error_code&) override {}
  void on_field_impl(http::field, boost::beast::string_view name, boost::beast::string_view value,
                     boost::beast::error_code&) override {
    ++head.field_count;
    if (head.headers.size() < k_max_header_fields) {
      head.headers.emplace_back(std::string(name.data(), name.size()),
                                std::string(value.data(), value.size()));
    }
  }
  void on_header_impl(boost::beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&,
                         boost::beast::error_code&) override {}
  std::size_t on_body_impl(boost::beast::string_view body, boost::beast::error_code&) override {
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, boost::beast::string_view,
                            boost::beast::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                 boost::beast::error_code&) override {
    return body.size();
  }
  void on_finish_impl(boost::beast::error_code&) override {}

  RequestHead& head;
};

RequestHeadReader::RequestHeadReader(std::size_t max_head_bytes)
    : m_parser(std::make_unique<Parser>(m_head)), m_max_head_bytes(max_head_bytes) {
  m_parser->header_limit(static_cast<std::uint32_t>(
      std::min<std::size_t>(max_head_bytes, std::numeric_limits<std::uint32_t>::max())));
  // A body is never read, so its size is not the parser's to refuse (the
  // routes answer 413). Not boost::none: Beast 1.74 compares a
  // Content-Length with an empty optional and refuses every one.
  m_parser->body_limit(std::numeric_limits<std::uint64_t>::max());
  m_parser->eager(false);  // stop at the head's end
}

RequestHeadReader::~RequestHeadReader() = default;

std::size_t RequestHeadReader::add(std::string_view bytes) {
  if (m_done || m_problem != HeadProblem::none || bytes.empty()) {
    return 0;
  }
  boost::system::error_code error;
  std::size_t taken = 0;
  // The parser takes the request line on its own, then the whole header
  // block once it has arrived; it asks for more by taking nothing.
  while (taken < bytes.size() && !m_parser->is_header_done()) {
    const std::size_t now =
        m_parser->put(boost::asio::const_buffer(bytes.data() + taken, bytes.size() - taken), error);
    taken += now;
    if (error == http::error::need_more) {
      error = {};
      if (now == 0) {
        break;
      }
      continue;
    }
    if (error) {
      break;
    }
  }
  m_taken += taken;
  if (error == http::error::header_limit ||
      (!m_parser->is_header_done() && m_taken + (bytes.size() - taken) > m_max_head_bytes)) {
    m_problem = HeadProblem::too_large;
    return taken;
  }
  if (error) {
    m_problem = HeadProblem::malformed;
    return taken;
  }
  if (!m_parser->is_header_done()) {
    return taken;
  }
  // A request's body without a length it can be framed by (RFC 9112 6.3):
  // refused, as the request after it could not be told apart.
  if (!m_parser->chunked() &&
      std::any_of(m_head.headers.begin(), m_head.headers.end(), [](const auto& field) {
        return equal_ignoring_case(field.first, "Transfer-Encoding");
      })) {
    m_problem = HeadProblem::malformed;
    return taken;
  }
  m_head.keep_alive = m_parser->keep_alive();
  // A request without a body is done with its head.
  m_head.body_follows = !m_parser->is_done();
  if (m_head.target.size() > k_max_target_bytes) {
    m_problem = HeadProblem::target_too_long;
    return taken;
  }
  const auto question = m_head.target.find('?');
  m_head.path = decode_percent(std::string_view(m_head.target).substr(0, question), false);
  if (question != std::string::npos) {
    m_head.params = parse_query(std::string_view(m_head.target).substr(question + 1));
  }
  m_done = true;
  return taken;
}

std::string decode_percent(std::string_view text, bool plus_is_space) {
  std::string decoded;
  decoded.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int high = hex_value(text[i + 1]);
      const int low = hex_value(text[i + 2]);
      if (high >= 0 && low >= 0) {
        decoded += static_cast<char>(high * 16 + low);
        i += 2;
        continue;
      }
    }
    decoded += plus_is_space && text[i] == '+' ? ' ' : text[i];
  }
  return decoded;
}

std::multimap<std::string, std::string> parse_query(std::string_view query) {
  std::multimap<std::string, std::string> params;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) {
      continue;
    }
    const auto equals = part.find('=');
    params.emplace(decode_percent(part.substr(0, equals), true),
                   equals == std::string_view::npos
                       ? std::string()
                       : decode_percent(part.substr(equals + 1), true));
  }
  return params;
}

std::string answer_head(int status, const std::vector<std::pair<std::string, std::string>>& headers,
                        std::size_t content_length, bool keep_alive) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " ";
  const auto reason = http::obsolete_reason(static_cast<http::status>(status));
  head.append(reason.data(), reason.size());
  head += "\r\n";
  for (const auto& [name, value] : headers) {
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  head += "Content-Length: " + std::to_string(content_length) + "\r\n";
  head += keep_alive ? "Keep-Alive: timeout=5, max=100\r\n" : "Connection: close\r\n";
  head += "\r\n";
  return head;
}

bool compressible(std::string_view content_type) {
  const auto type = content_type.substr(0, content_type.find(';'));
  return (type.starts_with("text/") && type != "text/event-stream") || type == "application/json" ||
         type == "application/javascript" || type == "image/svg+xml" || type == "application/xml";
}

namespace {

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) {
    return {};
  }
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// A q-value of zero ("0", "0.", "0.000"): the coding is refused.
bool refused_by_weight(std::string_view parameters) {
  while (!parameters.empty()) {
    const auto semicolon = parameters.find(';');
    const auto parameter = trimmed(parameters.substr(0, semicolon));
    parameters =
        semicolon == std::string_view::npos ? std::string_view() : parameters.substr(semicolon + 1);
    if (parameter.size() >= 2 && (parameter[0] == 'q' || parameter[0] == 'Q') &&
        parameter[1] == '=') {
      const auto value = trimmed(parameter.substr(2));
      return !value.empty() && value[0] == '0' &&
             value.find_first_not_of("0.") == std::string_view::npos;
    }
  }
  return false;
}

}  // namespace

bool accepts_gzip(std::string_view accept_encoding) {
  // "gzip", "gzip;q=0.5", "x-gzip", in a list; "gzip;q=0" refuses it.
  while (!accept_encoding.empty()) {
    const auto comma = accept_encoding.find(',');
    const auto item = accept_encoding.substr(0, comma);
    accept_encoding =
        comma == std::string_view::npos ? std::string_view() : accept_encoding.substr(comma + 1);
    const auto semicolon = item.find(';');
    const auto coding = trimmed(item.substr(0, semicolon));
    if (!equal_ignoring_case(coding, "gzip") && !equal_ignoring_case(coding, "x-gzip")) {
      continue;
    }
    return semicolon == std::string_view::npos || !refused_by_weight(item.substr(semicolon + 1));
  }
  return false;
}

std::string gzip(const std::vector<std::string_view>& pieces) {
  z_stream stream{};
  // 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::runtime_error("zlib cannot start a gzip stream");
  }
  std::size_t total = 0;
  for (const auto piece : pieces) {
    total += piece.size();
  }
  std::string out(deflateBound(&stream, total) + 64, '\0');
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(pieces[i].data()));
    stream.avail_in = static_cast<uInt>(pieces[i].size());
    const int flush = i + 1 == pieces.size() ? Z_FINISH : Z_NO_FLUSH;
    const int result = deflate(&stream, flush);
    if (result == Z_STREAM_ERROR || (flush == Z_FINISH && result != Z_STREAM_END)) {
      deflateEnd(&stream);
      throw std::runtime_error("zlib failed to compress an answer");
    }
  }
  if (pieces.empty()) {
    stream.avail_in = 0;
    if (deflate(&stream, Z_FINISH) != Z_STREAM_END) {
      deflateEnd(&stream);
      throw std::runtime_error("zlib failed to compress an answer");
    }
  }
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

}  // namespace envcontract::daemon
