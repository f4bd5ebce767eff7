// HMAC-SHA256 against RFC 4231's test vectors.
#include <gtest/gtest.h>

#include "common/sha256.hpp"

namespace envcontract::common {
namespace {

TEST(Hmac, Rfc4231TestVectors) {
  EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hmac_sha256_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // A key longer than the block is hashed first (test case 6).
  EXPECT_EQ(hmac_sha256_hex(std::string(131, '\xaa'),
                            "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

}  // namespace
}  // namespace envcontract::common
