// Containers as targets: what a runtime's inspect and list say, read into
// targets (docker's own output, a container that cannot be inspected).
#include "discovery/container_runtime.hpp"

#include <gtest/gtest.h>

namespace envcontract::discovery {
namespace {

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

TEST(ContainerRuntime, ParsesInspectAsDockerPrintsIt) {
  // Trimmed from `docker inspect` (Docker 28): the fields the agent reads.
  const std::string text = R"([{
    "Id": "9f2c1b7e0a4d",
    "Created": "2026-11-30T08:00:00Z",
    "State": {"Status": "running", "Running": true, "Paused": false, "Pid": 31337},
    "Image": "sha256:4b1c0ffee",
    "Name": "/trainer-0",
    "GraphDriver": {"Data": {"LowerDir": "/var/lib/docker/overlay2/l/A",
                             "MergedDir": "/var/lib/docker/overlay2/abc/merged"},
                    "Name": "overlay2"},
    "Config": {"Image": "harbor.example/flagos-runtime/kunlunxin:2.2.0", "Env": ["PATH=/x"]}
  }])";
  const auto parsed = parse_inspect_output(text);
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_EQ(parsed->name, "trainer-0");
  EXPECT_TRUE(parsed->running);
  EXPECT_EQ(parsed->pid, 31337);
  EXPECT_EQ(parsed->image, "harbor.example/flagos-runtime/kunlunxin:2.2.0");
  EXPECT_EQ(parsed->image_id, "sha256:4b1c0ffee");
  EXPECT_EQ(parsed->merged_dir, "/var/lib/docker/overlay2/abc/merged");

  for (const char* bad : {"", "{}", "[]", "[{\"State\": 3}]", "not json"}) {
    EXPECT_FALSE(parse_inspect_output(bad)) << bad;
  }
  const auto stopped = parse_inspect_output(
      R"([{"Id": "1", "State": {"Status": "exited", "Running": false, "Pid": 0}}])");
  ASSERT_TRUE(stopped);
  EXPECT_FALSE(stopped->running);
  EXPECT_EQ(stopped->status, "exited");
}

// A container the runtime cannot show (no daemon here, or no such
// container) is a target with a problem, never an error of the scan.
TEST(ContainerRuntime, AContainerThatCannotBeInspectedIsATargetWithAProblem) {
  ContainerConfig config;
  config.name = "trainer";
  config.exec = ContainerConfig::Exec::docker;
  config.container = "envcontract-no-such-container";
  const auto target = resolve_container(config);
  EXPECT_FALSE(target.problem.empty());
  if (find_system_command("docker").empty()) {
    EXPECT_NE(target.problem.find("docker is not installed"), std::string::npos) << target.problem;
  } else {
    EXPECT_NE(target.problem.find("docker inspect envcontract-no-such-container"),
              std::string::npos)
        << target.problem;
  }
  EXPECT_TRUE(target.exec.empty());
  EXPECT_EQ(inspect_argv("/usr/bin/docker", "x"),
            (Strings{"/usr/bin/docker", "inspect", "--type", "container", "--", "x"}));
}

// Found containers: the list the runtime is asked for, what of its answer
// is taken, and the configuration each found one gets (its own configured
// entry winning).
TEST(ContainerRuntime, ContainersFoundInTheRuntimesListBecomeTargets) {
  ContainerDiscovery discovery;
  discovery.runtime = "podman";
  discovery.label = "envcontract.scan=true";
  discovery.env_roots = {"/opt/conda"};
  EXPECT_EQ(list_argv("/usr/bin/podman", discovery),
            (Strings{"/usr/bin/podman", "ps", "--format", "{{.Names}}", "--filter",
                     "label=envcontract.scan=true"}));
  discovery.label.clear();
  EXPECT_EQ(list_argv("/usr/bin/podman", discovery),
            (Strings{"/usr/bin/podman", "ps", "--format", "{{.Names}}"}));

  const auto listing = parse_container_list("trainer-0\nserving\n\n$(reboot)\n../x\n");
  EXPECT_EQ(listing.names, (Strings{"trainer-0", "serving"}));
  EXPECT_EQ(listing.problem, "2 listed name(s) are not container names");
  std::string many;
  for (int i = 0; i < 300; ++i) {
    many += "c" + std::to_string(i) + "\n";
  }
  const auto bounded = parse_container_list(many);
  EXPECT_EQ(bounded.names.size(), 256U);
  EXPECT_NE(bounded.problem.find("more than 256"), std::string::npos);

  ContainerConfig own;
  own.name = "trainer";
  own.container = "trainer-0";
  own.exec = ContainerConfig::Exec::docker;
  discovery.exec = ContainerConfig::Exec::docker;  // their runtime's own exec: podman's
  const auto found = discovered_configs(discovery, listing, {own});
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].name, "serving");
  EXPECT_EQ(found[0].container, "serving");
  EXPECT_EQ(found[0].exec, ContainerConfig::Exec::podman);
  EXPECT_EQ(found[0].runtime, "podman");
  EXPECT_EQ(found[0].env_roots, std::vector<fs::path>{"/opt/conda"});

  // Without a client, the listing says why, for the report.
  discovery.runtime = "envcontract-no-such-runtime";
  EXPECT_EQ(list_containers(discovery).problem,
            "envcontract-no-such-runtime is not installed (looked in the system's bin "
            "directories)");
}

}  // namespace
}  // namespace envcontract::discovery
