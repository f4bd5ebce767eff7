#pragma once

#include <string>
#include <string_view>

namespace envcontract::common {

// The SHA-256 of `bytes` as 64 lowercase hex digits (GNU Nettle's).
std::string sha256_hex(std::string_view bytes);

// The HMAC-SHA256 of `message` under `key` (RFC 2104), as 64 lowercase hex
// digits: what a webhook receiver recomputes to trust a payload.
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

}  // namespace envcontract::common
