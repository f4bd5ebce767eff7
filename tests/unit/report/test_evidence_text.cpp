// Evidence as a person reads it in a terminal (fleetctl check -v, scan -v).
#include "report/evidence_text.hpp"

#include <gtest/gtest.h>

namespace envcontract::report {
namespace {

TEST(EvidenceText, NestedObjectsListsAndTextBlocksAreIndentedLines) {
  const auto evidence = Json::parse(R"json({
    "error": "libbkcl.so: cannot open shared object file",
    "missing": {"name": "libbkcl.so", "searched": ["/a (LD_LIBRARY_PATH)", "/lib (system)"]},
    "stderr_tail": "Traceback:\n  File \"x.py\", line 1\nSegmentation fault",
    "empty": "", "none": null, "nothing": []
})json");
  EXPECT_EQ(evidence_text(evidence, "  "),
            "  error: libbkcl.so: cannot open shared object file\n"
            "  missing:\n"
            "    name: libbkcl.so\n"
            "    searched: /a (LD_LIBRARY_PATH), /lib (system)\n"
            "  stderr_tail:\n"
            "    Traceback:\n"
            "      File \"x.py\", line 1\n"
            "    Segmentation fault\n");
}

TEST(EvidenceText, AHangGroupsItsThreadsAndCutsItsStack) {
  Json threads = Json::array();
  threads.push_back({{"tid", 7}, {"name", "python"}, {"state", "R"}, {"cpu_percent", 99.6}});
  for (int tid = 8; tid < 73; ++tid) {
    threads.push_back({{"tid", tid},
                       {"name", "python"},
                       {"state", "S"},
                       {"cpu_percent", 0.0},
                       {"wchan", "futex_do_wait"}});
  }
  Json stack = Json::array();
  for (int frame = 0; frame < 20; ++frame) {
    stack.push_back({{"function", frame == 0 ? "xpu_wait" : ""}, {"library", "libxpurt.so.1"}});
  }
  const std::string text = evidence_text(
      {{"classification", "spin"}, {"native_stack", stack}, {"threads", threads}}, "");
  EXPECT_NE(text.find("native_stack:\n  #0 xpu_wait (libxpurt.so.1)\n  #1 ?? (libxpurt.so.1)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  #11 ?? (libxpurt.so.1)\n  ... 8 more\n"), std::string::npos) << text;
  EXPECT_NE(text.find("threads:\n  thread 7 (python): state R, 100% CPU\n"
                      "  65 threads: state S, waiting in futex_do_wait\n"),
            std::string::npos)
      << text;
}

TEST(EvidenceText, LongListsOfObjectsAreCut) {
  Json rows = Json::array();
  for (int i = 0; i < 30; ++i) {
    rows.push_back({{"path", "/x/" + std::to_string(i)}});
  }
  const std::string text = evidence_text({{"rows", rows}}, "");
  EXPECT_NE(text.find("  - {\"path\":\"/x/11\"}\n  ... 18 more\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("/x/12"), std::string::npos);
}

// Evidence holds env output and, in fleetctl, text from remote hosts: an
// escape sequence or a carriage return never reaches the terminal as such.
TEST(EvidenceText, ControlCharactersAreShownNotSent) {
  const std::string text =
      evidence_text({{"stderr_tail", "ok\x1b[2J\rwiped\nnext"}, {"k\x1b", "v\x07"}}, "");
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_NE(text.find("ok\\x1b[2J\\x0dwiped"), std::string::npos) << text;
  EXPECT_NE(text.find("k\\x1b: v\\x07"), std::string::npos) << text;
}

}  // namespace
}  // namespace envcontract::report
