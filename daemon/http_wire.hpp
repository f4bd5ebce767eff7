#pragma once

// HTTP/1.1 as the agent's server reads and writes it, apart from sockets
// and threads: a request's head parsed as it arrives (Boost.Beast's parser,
// which bounds it and checks its syntax), its target decoded, and an
// answer's head and gzip body made. Pure functions over bytes, so that they
// can be tested and fuzzed on their own.
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace envcontract::daemon {

// Header fields a request may send; those past it are counted, not kept.
inline constexpr std::size_t k_max_header_fields = 100;

// A request's head, as sent and as handlers see it.
struct RequestHead {
  std::string method;
  std::string target;                              // as sent: path and query, percent-encoded
  std::string path;                                // decoded
  std::multimap<std::string, std::string> params;  // the query's, decoded
  // As sent, in order: the first k_max_header_fields of them.
  std::vector<std::pair<std::string, std::string>> headers;
  std::size_t field_count = 0;  // as sent, kept or not
  bool http_1_1 = true;
  bool keep_alive = true;     // by its version and Connection header
  bool body_follows = false;  // as the parser read Content-Length and Transfer-Encoding

  // The first value of a header named in any case, or "".
  std::string header(std::string_view name) const;
  std::size_t header_count(std::string_view name) const;
  // A body follows the head (Content-Length other than 0, or
  // Transfer-Encoding), by the parser or by the fields kept.
  bool has_body() const;
};

// Why a request's head could not be read.
enum class HeadProblem {
  none,
  malformed,        // 400
  too_large,        // 431: past the bound given to the reader
  target_too_long,  // 414
};

// Reads one request's head from bytes as they come. Call add() with bytes
// not yet taken until done() or problem(); what it did not take (pipelined
// requests, a body) is the caller's.
class RequestHeadReader {
 public:
  explicit RequestHeadReader(std::size_t max_head_bytes);
  ~RequestHeadReader();
  RequestHeadReader(const RequestHeadReader&) = delete;
  RequestHeadReader& operator=(const RequestHeadReader&) = delete;

  // How many of `bytes` it took (those after the head are never taken);
  // bytes not taken must be given again, with more after them.
  std::size_t add(std::string_view bytes);
  bool done() const { return m_done; }
  HeadProblem problem() const { return m_problem; }
  // Once done().
  const RequestHead& head() const { return m_head; }
  RequestHead take_head() { return std::move(m_head); }

 private:
  struct Parser;
  RequestHead m_head;  // before the parser, which writes into it
  std::unique_ptr<Parser> m_parser;
  std::size_t m_taken = 0;
  std::size_t m_max_head_bytes;
  bool m_done = false;
  HeadProblem m_problem = HeadProblem::none;
};

// "%41+b" as a path ("A+b") or a query's part ("A b"); a '%' not followed by
// two hex digits stays as it is.
std::string decode_percent(std::string_view text, bool plus_is_space);
// A query's "a=1&b=&c" as parameters, each decoded.
std::multimap<std::string, std::string> parse_query(std::string_view query);

// The head of an answer, status line to the empty line. `headers` are the
// route's own; Content-Length and Connection are written here.
std::string answer_head(int status, const std::vector<std::pair<std::string, std::string>>& headers,
                        std::size_t content_length, bool keep_alive);

// Whether a body of this type is worth compressing (text, JSON, JavaScript,
// SVG), and whether the client takes gzip.
bool compressible(std::string_view content_type);
bool accepts_gzip(std::string_view accept_encoding);
// `pieces`, one after the other, as one gzip stream.
std::string gzip(const std::vector<std::string_view>& pieces);

}  // namespace envcontract::daemon
