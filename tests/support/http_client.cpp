#include "tests/support/http_client.hpp"

#include <httplib.h>

namespace envcontract::testing {
namespace {

HttpResult convert(const httplib::Result& result) {
  HttpResult converted;
  if (!result) {
    converted.error = httplib::to_string(result.error());
    return converted;
  }
  converted.status = result->status;
  converted.body = result->body;
  for (const auto& [key, value] : result->headers) {
    converted.headers[key] = value;
  }
  return converted;
}

httplib::Client client(const std::string& base) {
  httplib::Client client(base);
  client.set_connection_timeout(5);
  client.set_read_timeout(30);
  return client;
}

}  // namespace

HttpResult http_get(const std::string& base, const std::string& path) {
  auto c = client(base);
  return convert(c.Get(path));
}

HttpResult http_post(const std::string& base, const std::string& path, const std::string& body,
                     const std::map<std::string, std::string>& headers) {
  auto c = client(base);
  httplib::Headers list(headers.begin(), headers.end());
  return convert(c.Post(path, list, body, "application/json"));
}

HttpResult http_request(const std::string& base, const std::string& method,
                        const std::string& path) {
  auto c = client(base);
  httplib::Request request;
  request.method = method;
  request.path = path;
  return convert(c.send(request));
}

}  // namespace envcontract::testing
