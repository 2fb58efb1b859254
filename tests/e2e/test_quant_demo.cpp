// Quantized demo model on its held-out text through `hfstatic perplexity`: int8 within 1% of
// the float16 program's perplexity, int4 in groups of 32 within 10%, and groups of 128 refused
// for the 704-wide down projection.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "test_support.h"

namespace hfstatic {
namespace {

const std::string kDemo = std::string(HFSTATIC_SOURCE_DIR) + "/models/demo";

double perplexity_of(const test::TempDir& dir, const std::vector<std::string>& flags) {
  const std::string out = dir.file(cat("demo", flags.size(), flags.empty() ? "" : flags[1], ".hfs"));
  std::vector<std::string> args = {"export", kDemo, "-o", out, "--max-context", "512", "--prefill-len", "64", "-q"};
  args.insert(args.end(), flags.begin(), flags.end());
  auto r = test::run_cli(args);
  if (r.exit_code != 0) ADD_FAILURE() << r.err;
  r = test::run_cli({"perplexity", "-m", out, "-f", kDemo + "/heldout.txt"});
  std::smatch m;
  if (r.exit_code != 0 || !std::regex_search(r.out, m, std::regex("perplexity ([0-9.]+) "))) {
    ADD_FAILURE() << r.out << r.err;
    return 0;
  }
  return std::stod(m[1]);
}

TEST(DemoModelQuantized, PerplexityStaysCloseToFloat16) {
  test::TempDir dir("e2e-quant");
  const double f16 = perplexity_of(dir, {});
  const double int8 = perplexity_of(dir, {"--weights-dtype", "int8"});
  const double int4 = perplexity_of(dir, {"--weights-dtype", "int4", "--group-size", "32"});
  // The demo model's float16 perplexity is about 56 (models/demo/heldout_eval.json).
  EXPECT_GT(f16, 40);
  EXPECT_LT(f16, 70);
  EXPECT_LT(std::abs(int8 / f16 - 1), 0.01) << int8 << " vs " << f16;
  EXPECT_LT(std::abs(int4 / f16 - 1), 0.10) << int4 << " vs " << f16;
  EXPECT_NE(int4, f16);
  auto r =
      test::run_cli({"export", kDemo, "-o", dir.file("g128.hfs"), "--weights-dtype", "int4", "--group-size", "128"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, testing::HasSubstr("tensor 'model.layers.0.mlp.down_proj.weight' [256, 704] has 704 input "
                                        "features, not a multiple of --group-size 128 (group sizes that fit: 32, 64)"));
}

}  // namespace
}  // namespace hfstatic
