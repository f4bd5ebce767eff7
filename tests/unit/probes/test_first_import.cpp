// The first import of a smoke snippet, read from its text: what decides
// whether the snippet may start from an interpreter that made that import.
#include "probes/first_import.hpp"

#include <gtest/gtest.h>

namespace envcontract::probes {
namespace {

TEST(FirstImportOfSnippet, ThePlatformsSnippetsStartWithTorch) {
  EXPECT_EQ(first_import_of_snippet("import torch\nimport torch_fl\nx = 1\n"), "torch");
  EXPECT_EQ(first_import_of_snippet("import torch_fl\ntorch_fl.flagos.embedding([1])\n"),
            "torch_fl");
  // Blank and comment lines first, Windows line ends.
  EXPECT_EQ(first_import_of_snippet("\n# the first device op\n  # indented comment\r\n"
                                    "import torch\r\n"),
            "torch");
}

TEST(FirstImportOfSnippet, ASubmoduleOrAFromImportImportsItsTopLevelFirst) {
  EXPECT_EQ(first_import_of_snippet("import torch.cuda\n"), "torch");
  EXPECT_EQ(first_import_of_snippet("import torch.cuda as cuda, os\n"), "torch");
  EXPECT_EQ(first_import_of_snippet("from torch import nn\n"), "torch");
  EXPECT_EQ(first_import_of_snippet("from torch.nn import functional as F\n"), "torch");
  EXPECT_EQ(first_import_of_snippet("from  torch_fl.flagos  import  device\n"), "torch_fl");
  EXPECT_EQ(first_import_of_snippet("import torch; print(torch.__version__)\n"), "torch");
  EXPECT_EQ(first_import_of_snippet("import torch  # the CPU build\n"), "torch");
  EXPECT_EQ(first_import_of_snippet("import torch"), "torch");
}

TEST(FirstImportOfSnippet, AnythingElseFirstIsNotKnown) {
  // Code that may run before any import, or an import that is not plainly one.
  EXPECT_EQ(first_import_of_snippet("import os\nimport torch\n"), "os");
  EXPECT_EQ(first_import_of_snippet("x = 1\nimport torch\n"), "");
  EXPECT_EQ(first_import_of_snippet("\"\"\"Docstring.\"\"\"\nimport torch\n"), "");
  EXPECT_EQ(first_import_of_snippet("from __future__ import annotations\nimport torch\n"), "");
  EXPECT_EQ(first_import_of_snippet("from . import torch\n"), "");
  EXPECT_EQ(first_import_of_snippet("from .torch import x\n"), "");
  EXPECT_EQ(first_import_of_snippet("import \\\n    torch\n"), "");
  EXPECT_EQ(first_import_of_snippet("import torch \\\n    , os\n"), "");
  EXPECT_EQ(first_import_of_snippet("  import torch\n"), "");
  EXPECT_EQ(first_import_of_snippet("importtorch\n"), "");
  EXPECT_EQ(first_import_of_snippet("import torch.\n"), "");
  EXPECT_EQ(first_import_of_snippet("import torch-fl\n"), "");
  EXPECT_EQ(first_import_of_snippet("from torch\n"), "");
  EXPECT_EQ(first_import_of_snippet("from torch imports x\n"), "");
  EXPECT_EQ(first_import_of_snippet("import torchvision\n"), "torchvision");
  EXPECT_EQ(first_import_of_snippet(""), "");
  EXPECT_EQ(first_import_of_snippet("# nothing but a comment\n\n"), "");
}

}  // namespace
}  // namespace envcontract::probes
