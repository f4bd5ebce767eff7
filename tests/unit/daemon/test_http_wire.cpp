// The HTTP side's reading of request heads and writing of answers, over
// bytes as clients send them (whole, byte by byte, pipelined, malformed).
#include "daemon/http_wire.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <string_view>
#include <vector>

namespace envcontract::daemon {
namespace {

// Feeds `bytes` in pieces of `step` as a connection would, giving back what
// the reader did not take each time; returns the bytes left after the head.
std::string feed(RequestHeadReader& reader, std::string_view bytes, std::size_t step) {
  std::string pending;
  std::size_t offset = 0;
  while (!reader.done() && reader.problem() == HeadProblem::none && offset < bytes.size()) {
    pending.append(bytes.substr(offset, step));
    offset += step;
    pending.erase(0, reader.add(pending));
  }
  if (offset < bytes.size()) {
    pending.append(bytes.substr(offset));
  }
  return pending;
}

std::string gunzip(const std::string& compressed) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  std::string out(1 << 20, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&stream, Z_FINISH), Z_STREAM_END) << "not one whole gzip stream";
  out.resize(stream.total_out);
  inflateEnd(&stream);
  return out;
}

constexpr std::string_view k_request =
    "GET /api/v1/envs/%2Fopt%2Fconda?since=2026-12-01T00%3A00%3A00Z&a+b=c+d&flag&=x HTTP/1.1\r\n"
    "Host: 127.0.0.1:9714\r\n"
    "Accept-Encoding: gzip\r\n"
    "X-Twice: one\r\n"
    "x-twice: two\r\n"
    "\r\n";

TEST(HttpWire, AHeadIsReadWholeOrByteByByteAlike) {
  for (const std::size_t step : {k_request.size(), std::size_t{1}, std::size_t{7}}) {
    SCOPED_TRACE(step);
    RequestHeadReader reader(128 * 1024);
    const std::string left = feed(reader, k_request, step);
    ASSERT_TRUE(reader.done());
    EXPECT_EQ(left, "");
    const auto& head = reader.head();
    EXPECT_EQ(head.method, "GET");
    EXPECT_EQ(head.path, "/api/v1/envs//opt/conda");
    EXPECT_EQ(head.target.substr(0, 22), "/api/v1/envs/%2Fopt%2F");
    EXPECT_TRUE(head.http_1_1);
    EXPECT_TRUE(head.keep_alive);
    EXPECT_FALSE(head.has_body());
    EXPECT_EQ(head.params.find("since")->second, "2026-12-01T00:00:00Z");
    EXPECT_EQ(head.params.find("a b")->second, "c d") << "'+' is a space in a query";
    EXPECT_EQ(head.params.find("flag")->second, "");
    EXPECT_EQ(head.params.count(""), 1U);
    ASSERT_EQ(head.headers.size(), 4U);
    EXPECT_EQ(head.headers[2].first, "X-Twice") << "names as sent";
    EXPECT_EQ(head.header("x-TWICE"), "one") << "the first, named in any case";
    EXPECT_EQ(head.header_count("X-Twice"), 2U);
    EXPECT_EQ(head.header("Absent"), "");
  }
}

TEST(HttpWire, PipelinedRequestsAreLeftForTheNextHead) {
  const std::string two = std::string(k_request) + "HEAD /healthz HTTP/1.1\r\nHost: a\r\n\r\n";
  RequestHeadReader first(128 * 1024);
  const std::string left = feed(first, two, two.size());
  ASSERT_TRUE(first.done());
  EXPECT_EQ(left, "HEAD /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
  RequestHeadReader second(128 * 1024);
  EXPECT_EQ(feed(second, left, 5), "");
  ASSERT_TRUE(second.done());
  EXPECT_EQ(second.head().method, "HEAD");
  EXPECT_EQ(second.head().path, "/healthz");
}

TEST(HttpWire, ABodyIsNeverTakenAndIsSaidToFollow) {
  const std::string post = "POST /api/v1/scan HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbody";
  RequestHeadReader reader(128 * 1024);
  EXPECT_EQ(feed(reader, post, 3), "body");
  ASSERT_TRUE(reader.done());
  EXPECT_TRUE(reader.head().has_body());

  RequestHeadReader chunked(128 * 1024);
  feed(chunked, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n", 64);
  ASSERT_TRUE(chunked.done());
  EXPECT_TRUE(chunked.head().has_body());

  // A body that cannot be framed (its last coding is not chunked) is refused.
  RequestHeadReader unframed(128 * 1024);
  feed(unframed, "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nxyz", 64);
  EXPECT_FALSE(unframed.done());
  EXPECT_EQ(unframed.problem(), HeadProblem::malformed);

  RequestHeadReader empty(128 * 1024);
  feed(empty, "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 64);
  ASSERT_TRUE(empty.done());
  EXPECT_FALSE(empty.head().has_body());
}

TEST(HttpWire, FieldsPastTheBoundAreCountedNotKept) {
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 5000; ++i) {
    many += "a:\r\n";  // 30,000 of these fit in 128 KiB: none may cost a copy
  }
  many += "Host: late\r\n\r\n";
  RequestHeadReader reader(128 * 1024);
  feed(reader, many, 4096);
  ASSERT_TRUE(reader.done());
  EXPECT_EQ(reader.head().field_count, 5001U);
  EXPECT_EQ(reader.head().headers.size(), k_max_header_fields);
  EXPECT_EQ(reader.head().header("Host"), "") << "past the bound: not kept";
}

TEST(HttpWire, ALargeDeclaredBodyIsReadAsAHeadNotRefusedAsMalformed) {
  // The route answers 413; the parser does not bound a body it never reads.
  RequestHeadReader reader(128 * 1024);
  feed(reader, "POST /api/v1/scan HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n", 64);
  ASSERT_TRUE(reader.done());
  EXPECT_TRUE(reader.head().body_follows);
  EXPECT_TRUE(reader.head().has_body());
  EXPECT_EQ(reader.head().header("Content-Length"), "2000000");
}

TEST(HttpWire, HttpOneZeroClosesUnlessItAsksToKeepAlive) {
  RequestHeadReader plain(1024);
  feed(plain, "GET / HTTP/1.0\r\n\r\n", 64);
  ASSERT_TRUE(plain.done());
  EXPECT_FALSE(plain.head().http_1_1);
  EXPECT_FALSE(plain.head().keep_alive);
  RequestHeadReader asks(1024);
  feed(asks, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 64);
  EXPECT_TRUE(asks.head().keep_alive);
  RequestHeadReader closes(1024);
  feed(closes, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 64);
  EXPECT_FALSE(closes.head().keep_alive);
}

TEST(HttpWire, MalformedHeadsAreSaidToBe) {
  for (const std::string_view bad :
       {"GARBAGE\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", "G\x01T / HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n"}) {
    SCOPED_TRACE(bad);
    RequestHeadReader reader(1024);
    feed(reader, bad, 3);
    EXPECT_FALSE(reader.done());
    EXPECT_EQ(reader.problem(), HeadProblem::malformed);
  }
}

TEST(HttpWire, AHeadPastTheBoundIsTooLargeBeforeItEnds) {
  RequestHeadReader reader(4096);
  std::string flood = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 1000; ++i) {
    flood += "X-Padding: " + std::string(100, 'p') + "\r\n";
  }
  feed(reader, flood, 1000);  // never ends: no empty line
  EXPECT_EQ(reader.problem(), HeadProblem::too_large);

  RequestHeadReader one_line(4096);
  feed(one_line, "GET /" + std::string(10000, 'a'), 1500);
  EXPECT_EQ(one_line.problem(), HeadProblem::too_large);
}

TEST(HttpWire, ATargetPastEightKilobytesIsTooLong) {
  RequestHeadReader reader(128 * 1024);
  feed(reader, "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n", 4096);
  EXPECT_EQ(reader.problem(), HeadProblem::target_too_long);
  RequestHeadReader fits(128 * 1024);
  feed(fits, "GET /" + std::string(8000, 'a') + " HTTP/1.1\r\n\r\n", 4096);
  EXPECT_TRUE(fits.done());
}

TEST(HttpWire, PercentDecodingKeepsWhatIsNotAnEscape) {
  EXPECT_EQ(decode_percent("%41%62c", false), "Abc");
  EXPECT_EQ(decode_percent("a+b", false), "a+b");
  EXPECT_EQ(decode_percent("a+b", true), "a b");
  EXPECT_EQ(decode_percent("100%", false), "100%");
  EXPECT_EQ(decode_percent("%4", false), "%4");
  EXPECT_EQ(decode_percent("%zz%2f", false), "%zz/");
  EXPECT_EQ(decode_percent("%00", false), std::string(1, '\0'));
  EXPECT_EQ(parse_query("&&a=1&&").size(), 1U);
  EXPECT_EQ(parse_query("a=1=2").find("a")->second, "1=2");
}

TEST(HttpWire, AnAnswersHeadSaysItsLengthAndWhetherTheConnectionStays) {
  const std::string kept = answer_head(200, {{"Content-Type", "application/json"}}, 42, true);
  EXPECT_EQ(kept,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 42\r\n"
            "Keep-Alive: timeout=5, max=100\r\n\r\n");
  const std::string closed = answer_head(431, {}, 0, false);
  EXPECT_TRUE(closed.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n")) << closed;
  EXPECT_NE(closed.find("Connection: close\r\n"), std::string::npos) << closed;
  EXPECT_TRUE(answer_head(421, {}, 0, false).starts_with("HTTP/1.1 421 Misdirected Request\r\n"));
}

TEST(HttpWire, GzipIsOfferedOnlyWhereTheClientTakesIt) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("deflate, gzip;q=0.8, br"));
  EXPECT_TRUE(accepts_gzip(" GZIP "));
  EXPECT_TRUE(accepts_gzip("x-gzip"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("br, deflate"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip; q=0.000"));
  EXPECT_FALSE(accepts_gzip("gzip;Q=0"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0 "));
  EXPECT_FALSE(accepts_gzip("gzip;level=1;q=0"));
  EXPECT_TRUE(accepts_gzip("gzip;q=0.001"));
  EXPECT_FALSE(accepts_gzip("gzipped"));
  EXPECT_TRUE(compressible("application/json"));
  EXPECT_TRUE(compressible("text/plain; version=0.0.4; charset=utf-8"));
  EXPECT_TRUE(compressible("image/svg+xml"));
  EXPECT_FALSE(compressible("image/png"));
  EXPECT_FALSE(compressible("text/event-stream"));
}

TEST(HttpWire, PiecesAreCompressedAsOneStream) {
  const std::string first(100000, 'a');
  const std::string second = "{\"verdict\": \"drift\"}\n";
  const std::string compressed = gzip({first, "", second});
  EXPECT_LT(compressed.size(), 2000U);
  EXPECT_EQ(gunzip(compressed), first + second);
  EXPECT_EQ(gunzip(gzip({})), "");
}

}  // namespace
}  // namespace envcontract::daemon
