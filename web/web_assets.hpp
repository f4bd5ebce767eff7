#pragma once

#include <string_view>

namespace envcontract::web {

// One file of the dashboard, embedded at build time from web/.
struct Asset {
  std::string_view path;  // "/index.html", "/app.js", "/style.css"
  std::string_view content_type;
  std::string_view body;
};

// The asset served at `path` ("/" is index.html), or nullptr.
const Asset* find_asset(std::string_view path);

}  // namespace envcontract::web
