// common/printable.cpp: text from envs, contracts and other hosts never
// drives the operator's terminal.
#include <gtest/gtest.h>

#include "common/printable.hpp"

namespace envcontract::common {
namespace {

TEST(Printable, ControlCharactersAreShownEscaped) {
  EXPECT_EQ(printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable("a\rb\x07\x7f"), "a\\x0db\\x07\\x7f");
  EXPECT_EQ(printable("one\ntwo"), "one\\x0atwo");
  EXPECT_EQ(printable("one\ntwo", true), "one\ntwo");
  EXPECT_EQ(printable("tab\there"), "tab\\x09here");
  EXPECT_EQ(printable(std::string("nul\0byte", 8)), "nul\\x00byte");
}

// As UTF-8, U+009B is CSI (as ESC [ is) to a terminal that takes C1
// controls, and U+202E turns what follows around ("Trojan source").
TEST(Printable, UnicodeControlsAreShownEscaped) {
  EXPECT_EQ(printable("a\xc2\x9b"
                      "31mred"),
            "a\\xc2\\x9b31mred");
  EXPECT_EQ(printable("x\xc2\x85y"), "x\\xc2\\x85y") << "NEL";
  EXPECT_EQ(printable("file\xe2\x80\xaetxt.exe"), "file\\xe2\\x80\\xaetxt.exe");
  EXPECT_EQ(printable("\xe2\x81\xa6isolate\xe2\x81\xa9"), "\\xe2\\x81\\xa6isolate\\xe2\\x81\\xa9");
  EXPECT_EQ(printable("\xc2\xa0\xc2\xa9 \xe2\x80\x94"), "\xc2\xa0\xc2\xa9 \xe2\x80\x94")
      << "a no-break space, (c) and an em dash are text";
  EXPECT_EQ(printable("cut\xc2"), "cut\xc2") << "half a character at the end is left as is";
}

TEST(Printable, OtherTextIsKept) {
  EXPECT_EQ(printable("torch 2.10.0+cu129 ✓ é"), "torch 2.10.0+cu129 ✓ é");
  EXPECT_EQ(printable(""), "");
}

}  // namespace
}  // namespace envcontract::common
