#pragma once

#include <string_view>
#include <vector>

namespace envcontract::daemon {

// "ECNT": marks a SQLite file as ours (PRAGMA application_id).
inline constexpr int store_application_id = 0x45434e54;

// The migrations, in order: entry i takes a database from schema version i
// to i + 1. Append only; never edit one that has shipped.
const std::vector<std::string_view>& store_migrations();

}  // namespace envcontract::daemon
