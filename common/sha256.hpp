#pragma once

#include <string>
#include <string_view>

namespace envcontract::common {

// The SHA-256 of `bytes` as 64 lowercase hex digits (OpenSSL's EVP digest).
std::string sha256_hex(std::string_view bytes);

}  // namespace envcontract::common
