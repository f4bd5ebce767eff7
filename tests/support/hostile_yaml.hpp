#pragma once

#include <string>

// YAML that a loader must refuse rather than walk.
namespace envcontract::testing {

// Where the ten anchors of billion_laughs() stand.
enum class LaughsLayout {
  mapping,   // "lol0: &lol0 [...]", at the top of a document
  sequence,  // "  - &lol0 [...]", items of a list whose key the caller writes
};

// Ten lines that stand for 10^10 nodes: each anchor a list of ten aliases
// of the one before ("billion laughs"). Loading it takes a millisecond;
// walking it would take hours.
std::string billion_laughs(LaughsLayout layout);

}  // namespace envcontract::testing
