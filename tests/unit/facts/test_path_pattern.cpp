// Path patterns of contracts: {prefix}, {site} once per site dir, ${VAR}
// from the activated environment, and what the env sets matched literally.
#include "facts/path_pattern.hpp"

#include <gtest/gtest.h>

namespace envcontract::facts {
namespace {

PathAnchors anchors() {
  return {"/opt/conda/envs/torch-fl",
          {"/opt/conda/envs/torch-fl/lib/python3.10/site-packages", "/home/ci/.local/site"},
          {{"XPU_ROOT", "/usr/local/xpu"}}};
}

TEST(PathPattern, AnchorsAndVariablesAreSubstituted) {
  EXPECT_EQ(expand_path_pattern("{prefix}/lib/libbkcl.so", anchors()),
            std::vector<std::string>{"/opt/conda/envs/torch-fl/lib/libbkcl.so"});
  EXPECT_EQ(expand_path_pattern("${XPU_ROOT}/lib/libxpurt.so*", anchors()),
            std::vector<std::string>{"/usr/local/xpu/lib/libxpurt.so*"});
  EXPECT_EQ(expand_path_pattern("/etc/flagos-image", anchors()),
            std::vector<std::string>{"/etc/flagos-image"});
}

TEST(PathPattern, SiteExpandsOncePerSiteDirAndNotAtAllWhenNoneIsKnown) {
  EXPECT_EQ(expand_path_pattern("{site}/torch/lib/libc10_cuda.so", anchors()),
            (std::vector<std::string>{
                "/opt/conda/envs/torch-fl/lib/python3.10/site-packages/torch/lib/libc10_cuda.so",
                "/home/ci/.local/site/torch/lib/libc10_cuda.so"}));
  PathAnchors unknown = anchors();
  unknown.sites.clear();
  EXPECT_TRUE(expand_path_pattern("{site}/torch", unknown).empty());
}

TEST(PathPattern, AnUnsetVariableIsEmptyAndNamed) {
  EXPECT_EQ(expand_path_pattern("${CUDA_HOME}/lib64", anchors()),
            std::vector<std::string>{"/lib64"});
  EXPECT_EQ(unset_variables("${XPU_ROOT}/a:${CUDA_HOME}/b:${LD_LIBRARY_PATH}", anchors().variables),
            (std::vector<std::string>{"CUDA_HOME", "LD_LIBRARY_PATH"}));
  EXPECT_TRUE(unset_variables("${unterminated", anchors().variables).empty());
}

// What the env controls never becomes a pattern, nor is scanned again.
TEST(PathPattern, WhatTheEnvSetsIsMatchedLiterally) {
  PathAnchors hostile = anchors();
  hostile.prefix = "/srv/envs/[a-z]*";
  hostile.variables["XPU_ROOT"] = "/x/{prefix}?";
  EXPECT_EQ(expand_path_pattern("{prefix}/lib/*.so", hostile, true),
            std::vector<std::string>{"/srv/envs/\\[a-z\\]\\*/lib/*.so"})
      << "the contract's own * stays a wildcard";
  EXPECT_EQ(expand_path_pattern("${XPU_ROOT}/lib", hostile),
            std::vector<std::string>{"/x/{prefix}?/lib"})
      << "a substituted value is not expanded again";
  EXPECT_EQ(glob_literal("a*b?c[d]e\\f"), "a\\*b\\?c\\[d\\]e\\\\f");
}

}  // namespace
}  // namespace envcontract::facts
