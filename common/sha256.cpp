#include "common/sha256.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <stdexcept>

namespace envcontract::common {

namespace {

std::string hex_of(const unsigned char* digest, unsigned int length) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string text;
  text.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    text += hex[digest[i] >> 4];
    text += hex[digest[i] & 0x0f];
  }
  return text;
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("OpenSSL could not compute a SHA-256 digest");
  }
  return hex_of(digest.data(), length);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest.data(),
           &length) == nullptr) {
    throw std::runtime_error("OpenSSL could not compute an HMAC-SHA256");
  }
  return hex_of(digest.data(), length);
}

}  // namespace envcontract::common
