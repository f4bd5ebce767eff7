// What reports may show of environment variables: where things are found,
// never credentials.
#include <gtest/gtest.h>

#include "common/shown_values.hpp"

namespace envcontract::common {
namespace {

TEST(ShownValues, OnlyWhereThingsAreFoundIsShown) {
  for (const char* name : {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "XPU_ROOT", "CUDA_HOME",
                           "CONDA_PREFIX", "VIRTUAL_ENV", "TORCH_EXTENSIONS_DIR", "LD_PRELOAD"}) {
    EXPECT_TRUE(variable_value_shown(name)) << name;
  }
  for (const char* name :
       {"HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "WANDB_API_KEY", "PGPASSWORD", "CONDA_CHANNEL_ALIAS",
        "CONDA_CHANNELS", "TOKEN_PATH", "AUTH_HOME", "PS1", "HTTPS_PROXY"}) {
    EXPECT_FALSE(variable_value_shown(name)) << name;
  }
  EXPECT_EQ(shown_variable_value("HF_TOKEN", "hf_abc"), "(set, 6 bytes; value not shown)");
  EXPECT_EQ(shown_variable_value("PATH", "/usr/bin:/bin"), "/usr/bin:/bin");
}

TEST(ShownValues, CredentialsInUrlsAreMasked) {
  EXPECT_EQ(without_credentials("https://user:pw@mirror.example/simple"),
            "https://***@mirror.example/simple");
  // Split at the last '@' of the authority, as Python does.
  EXPECT_EQ(without_credentials("https://u:p@ss@host/x"), "https://***@host/x");
  EXPECT_EQ(without_credentials("https://conda.anaconda.org/t/tk-123/channel"),
            "https://conda.anaconda.org/t/***/channel");
  EXPECT_EQ(without_credentials("a:https://u:p@h:8443/x:https://plain.example/y"),
            "a:https://***@h:8443/x:https://plain.example/y");
  // An '@' in the path is not user information.
  EXPECT_EQ(without_credentials("https://host/pkg@1.0"), "https://host/pkg@1.0");
  EXPECT_EQ(without_credentials("/opt/xpu/lib:/usr/lib"), "/opt/xpu/lib:/usr/lib");
  EXPECT_EQ(shown_variable_value("PIP_HOME", "https://me:secret@idx.example/"),
            "https://***@idx.example/");
}

}  // namespace
}  // namespace envcontract::common
