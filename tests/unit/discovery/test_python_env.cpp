// discovery/python_env.cpp: whose credentials an env's code is handed to
// the process runner with, and what discovery found as JSON.
#include "discovery/python_env.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace envcontract::discovery {
namespace {

PythonEnv env_owned_by(const std::string& name, uid_t uid, gid_t gid) {
  PythonEnv env;
  env.name = name;
  env.prefix = "/home/" + name + "/venv";
  env.kind = EnvKind::venv;
  env.python = env.prefix / "bin/python";
  env.python_version = "3.11.4";
  env.owner = name;
  env.found_by = {"home directories"};
  env.run_as.uid = uid;
  env.run_as.gid = gid;
  env.run_as.groups = {gid, 27};
  env.run_as.user = name;
  env.run_as.reason = "owner of the env";
  return env;
}

// An agent that is not root keeps its own credentials: none are handed on,
// whatever user the env would otherwise run as.
TEST(PythonEnv, NoCredentialsWhenTheAgentCannotSwitchUser) {
  PythonEnv env = env_owned_by("alice", 1000, 1000);
  env.run_as.switch_credentials = false;
  EXPECT_FALSE(credentials_of(env).has_value());
}

TEST(PythonEnv, CredentialsAreTheRunAsUserGroupAndSupplementaryGroupsWhenSwitching) {
  PythonEnv env = env_owned_by("alice", 1000, 100);
  env.run_as.switch_credentials = true;
  const auto credentials = credentials_of(env);
  ASSERT_TRUE(credentials.has_value());
  EXPECT_EQ(credentials->uid, 1000u);
  EXPECT_EQ(credentials->gid, 100u);
  EXPECT_EQ(credentials->groups, (std::vector<gid_t>{100, 27}));
  // Env code never keeps a capability through the change of user.
  EXPECT_FALSE(credentials->keep_ptrace);
}

// Root is a user like any other here: switching to uid 0 still hands on
// credentials (with their groups), so the runner applies no_new_privs and
// the groups, not the agent's own.
TEST(PythonEnv, CredentialsOfRootAreHandedOnWhenSwitching) {
  PythonEnv env = env_owned_by("root", 0, 0);
  env.run_as.groups = {};
  env.run_as.switch_credentials = true;
  const auto credentials = credentials_of(env);
  ASSERT_TRUE(credentials.has_value());
  EXPECT_EQ(credentials->uid, 0u);
  EXPECT_EQ(credentials->gid, 0u);
  EXPECT_TRUE(credentials->groups.empty());
}

// The credentials are the code's, never the reader's: a container env read
// as a uid of its own still runs as its run_as user.
TEST(PythonEnv, CredentialsAreTheRunAsUsersNotTheReaders) {
  PythonEnv env = env_owned_by("alice", 1000, 1000);
  env.run_as.switch_credentials = true;
  env.read_as = env.run_as;
  env.read_as->uid = 60001;
  env.read_as->gid = 60001;
  const auto credentials = credentials_of(env);
  ASSERT_TRUE(credentials.has_value());
  EXPECT_EQ(credentials->uid, 1000u);
  EXPECT_EQ(credentials->gid, 1000u);
}

TEST(PythonEnv, DiscoveryFindingNothingIsTwoEmptyLists) {
  const Json json = to_json(Discovery{});
  EXPECT_EQ(json, (Json{{"envs", Json::array()}, {"problems", Json::array()}}));
  // In this order: envs, then problems.
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json.begin().key(), "envs");
  EXPECT_EQ(std::next(json.begin()).key(), "problems");
}

TEST(PythonEnv, DiscoveryJsonHasEachEnvAsItsOwnJsonInOrder) {
  Discovery discovery;
  discovery.envs.push_back(env_owned_by("alice", 1000, 1000));
  discovery.envs.push_back(env_owned_by("bob", 1001, 1001));
  discovery.envs.back().kind = EnvKind::conda;
  const Json json = to_json(discovery);
  ASSERT_EQ(json.at("envs").size(), 2u);
  EXPECT_EQ(json.at("envs")[0], to_json(discovery.envs[0]));
  EXPECT_EQ(json.at("envs")[1], to_json(discovery.envs[1]));
  EXPECT_EQ(json.at("envs")[1].at("prefix"), "/home/bob/venv");
  EXPECT_EQ(json.at("envs")[1].at("kind"), to_string(EnvKind::conda));
  EXPECT_TRUE(json.at("problems").empty());
}

// A problem is its path and its text, as found, in the order found.
TEST(PythonEnv, DiscoveryJsonHasEachProblemAsItsPathAndWhatIsWrong) {
  Discovery discovery;
  discovery.problems.push_back({"/home/alice/.conda/environments.txt", "stale entry /gone"});
  discovery.problems.push_back({"/opt/envs/odd name:with\ttab", "not a directory"});
  const Json json = to_json(discovery);
  ASSERT_EQ(json.at("problems").size(), 2u);
  EXPECT_EQ(json.at("problems")[0], (Json{{"path", "/home/alice/.conda/environments.txt"},
                                          {"problem", "stale entry /gone"}}));
  EXPECT_EQ(json.at("problems")[1],
            (Json{{"path", "/opt/envs/odd name:with\ttab"}, {"problem", "not a directory"}}));
  EXPECT_EQ(json.at("problems")[0].begin().key(), "path");
  EXPECT_TRUE(json.at("envs").empty());
}

}  // namespace
}  // namespace envcontract::discovery
