#include "common/sha256.hpp"

// Nettle rather than OpenSSL: libcrypto costs the idle agent 3.4 MB
// resident once its default provider loads for one digest (docs/performance.md),
// and SHA-256 and HMAC are all the agent asks of a cryptographic library.
#include <nettle/hmac.h>
#include <nettle/sha2.h>

#include <array>
#include <cstdint>

namespace envcontract::common {

namespace {

using Digest = std::array<std::uint8_t, SHA256_DIGEST_SIZE>;

std::string hex_of(const Digest& digest) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string text;
  text.reserve(digest.size() * 2);
  for (const std::uint8_t byte : digest) {
    text += hex[byte >> 4];
    text += hex[byte & 0x0f];
  }
  return text;
}

const std::uint8_t* bytes_of(std::string_view text) {
  return reinterpret_cast<const std::uint8_t*>(text.data());
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  sha256_ctx context{};
  sha256_init(&context);
  sha256_update(&context, bytes.size(), bytes_of(bytes));
  Digest digest{};
  sha256_digest(&context, digest.size(), digest.data());
  return hex_of(digest);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  hmac_sha256_ctx context{};
  hmac_sha256_set_key(&context, key.size(), bytes_of(key));
  hmac_sha256_update(&context, message.size(), bytes_of(message));
  Digest digest{};
  hmac_sha256_digest(&context, digest.size(), digest.data());
  return hex_of(digest);
}

}  // namespace envcontract::common
