#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "common/result.hpp"
#include "process/run_as.hpp"

// Promotion: the name that CI runners and users activate is a symbolic link
// to a built env, switched in one rename(2), so nobody ever activates a
// half-switched env. The link it replaced is kept beside it for rollback.
namespace envcontract::provisioning {

struct LinkSwitch {
  std::filesystem::path link;
  std::filesystem::path target;                   // what it points to now
  std::optional<std::filesystem::path> previous;  // what it pointed to before, if anything
};

// ".NAME.previous" beside the link `NAME`: what rollback switches back to.
std::filesystem::path previous_link_of(const std::filesystem::path& link);

// Points `link` at `target` atomically. A link that is a real directory or
// file is never replaced. With `as` set (an agent running as root), the
// links are made with that user's filesystem credentials: they belong to the
// user, and the kernel checks the user's rights in the directory.
common::Result<LinkSwitch> switch_link(const std::filesystem::path& link,
                                       const std::filesystem::path& target,
                                       const facts::RunAs* as = nullptr);

// Points `link` back at what it pointed to before the last switch (and keeps
// the current target as the one before, so a second rollback undoes it).
common::Result<LinkSwitch> rollback_link(const std::filesystem::path& link,
                                         const facts::RunAs* as = nullptr);

// What `link` points to, or nullopt when it is not a symbolic link.
std::optional<std::filesystem::path> link_target(const std::filesystem::path& link);

}  // namespace envcontract::provisioning
