// An env's fingerprint: what it is made of, and the real files it stats.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "freshness/fingerprint.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::freshness {
namespace {

// The files a fingerprint stats come from the env's typed facts: the
// interpreter, each library of the closure, torch's version files (none for
// a torch that is absent), each module's real file, each distribution's
// metadata; the material changes with the contract.
TEST(Fingerprint, ItsFilesAreThoseTheFactsName) {
  facts::EnvFacts env;
  env.env.prefix = "/envs/a";
  env.env.python = "/envs/a/bin/python";
  facts::LibraryLinkage library;
  library.path = "/envs/a/lib/python3.10/site-packages/torch/_C.so";
  library.closure.push_back({"libc10.so", "_C.so", "/envs/a/lib/libc10.so"});
  env.linkage.libraries.push_back(library);
  env.static_facts.torch.present = true;
  env.static_facts.torch.location = "/envs/a/site/torch";
  env.static_facts.triton.location = "/envs/a/site/triton";  // not present: not statted
  env.static_facts.module_files.add("numpy", "/envs/a/site/numpy/__init__.py",
                                    "/pkgs/numpy/__init__.py");
  env.static_facts.module_files.finish();
  facts::Distribution numpy;
  numpy.metadata = "/envs/a/site/numpy-2.0.dist-info";
  env.static_facts.distributions.push_back(numpy);

  const auto input = fingerprint_input(env, "contract-1");
  EXPECT_EQ(
      input.files,
      (std::vector<std::string>{
          "/envs/a/bin/python", "/envs/a/lib/libc10.so",
          "/envs/a/lib/python3.10/site-packages/torch/_C.so", "/envs/a/site/numpy-2.0.dist-info",
          "/envs/a/site/numpy-2.0.dist-info/METADATA", "/envs/a/site/numpy-2.0.dist-info/PKG-INFO",
          "/envs/a/site/torch/__init__.py", "/envs/a/site/torch/_version.py",
          "/envs/a/site/torch/version.py", "/pkgs/numpy/__init__.py"}));
  EXPECT_EQ(input.material.rfind("contract-1", 0), 0U);
  EXPECT_NE(env_fingerprint(input), env_fingerprint(fingerprint_input(env, "contract-2")));
  EXPECT_EQ(env_fingerprint(input), env_fingerprint(input));
}

// A real file's fingerprint changes with its contents and its change time
// (a rewrite with the old modification time put back, as `rsync -t` does),
// and when it is removed; a file absent from the start is "absent".
TEST(Fingerprint, ChangesWithEachStatedFile) {
  testing::TempDir dir;
  const auto library = dir.path() / "libc10.so";
  std::ofstream(library) << "one";
  facts::EnvFacts env;
  env.env.prefix = dir.path();
  env.env.python = dir.path() / "python-absent";
  facts::LibraryLinkage linkage;
  linkage.path = library;
  env.linkage.libraries.push_back(linkage);
  const auto input = fingerprint_input(env, "contract");
  const auto first = env_fingerprint(input);

  struct stat before {};
  ASSERT_EQ(::stat(library.c_str(), &before), 0);
  // Rewritten with the same size and its old times put back, until the
  // change time moves: filesystems keep it to a clock tick, not a nanosecond.
  struct stat after {};
  for (int i = 0; i < 200; ++i) {
    std::ofstream(library) << "two";
    const timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, library.c_str(), times, 0), 0);
    ASSERT_EQ(::stat(library.c_str(), &after), 0);
    if (after.st_ctim.tv_sec != before.st_ctim.tv_sec ||
        after.st_ctim.tv_nsec != before.st_ctim.tv_nsec) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(after.st_size, before.st_size);
  ASSERT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  ASSERT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  ASSERT_NE(after.st_ctim.tv_nsec + after.st_ctim.tv_sec * 1'000'000'000L,
            before.st_ctim.tv_nsec + before.st_ctim.tv_sec * 1'000'000'000L)
      << "the change time never moved";
  const auto rewritten = env_fingerprint(input);
  EXPECT_NE(rewritten, first) << "only the change time moved: the fingerprint must too";

  std::filesystem::remove(library);
  EXPECT_NE(env_fingerprint(input), rewritten);
  EXPECT_NE(input.material.find("python-absent"), std::string::npos)
      << "the interpreter's path is in the facts' material";
}

}  // namespace
}  // namespace envcontract::freshness
