#pragma once

#include <map>
#include <string>

namespace envcontract::testing {

struct HttpResult {
  int status = 0;  // 0: no answer (connection refused, timeout)
  std::string body;
  std::map<std::string, std::string> headers;
  std::string error;  // why there was no answer
};

// Plain HTTP on loopback with cpp-httplib's client; `base` is "http://127.0.0.1:PORT".
HttpResult http_get(const std::string& base, const std::string& path);
HttpResult http_post(const std::string& base, const std::string& path, const std::string& body,
                     const std::map<std::string, std::string>& headers = {});
HttpResult http_request(const std::string& base, const std::string& method,
                        const std::string& path);

}  // namespace envcontract::testing
