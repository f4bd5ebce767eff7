// libFuzzer target: any bytes through the one reader of JSON from outside.
// It must never throw or crash, never hand back a value deeper than its
// bound, and refuse for depth exactly what nests deeper: nlohmann's own
// parser, unbounded, is the reference.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "common/json_from_outside.hpp"
#include "common/json_text.hpp"

namespace {

using Json = nlohmann::ordered_json;

// Levels of arrays and objects in `value`, walked without recursion (the
// reference's values can be as deep as the input is long).
int depth_of(const Json& value) {
  int deepest = 0;
  std::vector<std::pair<const Json*, int>> pending = {{&value, 0}};
  while (!pending.empty()) {
    const auto [json, depth] = pending.back();
    pending.pop_back();
    if (json->is_structured()) {
      deepest = std::max(deepest, depth + 1);
      for (const auto& child : *json) {
        pending.emplace_back(&child, depth + 1);
      }
    }
  }
  return deepest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envcontract::common;
  const std::string text(reinterpret_cast<const char*>(data), size);
  constexpr int k_depth = 8;  // small, so that the fuzzer reaches it often
  const auto bounded =
      parse_outside_json(text, "the input", {.max_bytes = 4096, .max_depth = k_depth});
  // nlohmann stops at a NUL byte and ignores the rest; the reader refuses it.
  const auto reference = text.find('\0') == std::string::npos ? Json::parse(text, nullptr, false)
                                                              : Json(Json::value_t::discarded);
  if (text.size() > 4096) {
    if (bounded.ok()) {
      std::abort();  // the size bound let a larger text through
    }
    return 0;
  }
  if (reference.is_discarded()) {
    if (bounded.ok()) {
      std::abort();  // accepted what is not JSON
    }
    return 0;
  }
  const int depth = depth_of(reference);
  if (bounded.ok() != (depth <= k_depth)) {
    std::abort();  // the pre-scan and the parser disagree on the depth
  }
  if (bounded.ok()) {
    if (*bounded != reference) {
      std::abort();
    }
    // What readers then do with a value: copy it, print it.
    const Json copy = *bounded;
    (void)json_text(copy, 2);
  }
  return 0;
}
