// Quantized programs from the command line: export's --weights-dtype int8|int4 and
// --group-size, inspect's tensor list, run, and the perplexity command against the NumPy
// reference (float and quantized).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "format/program.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "util/mapped_file.h"

namespace hfstatic {
namespace {

namespace fs = std::filesystem;
using testing::HasSubstr;

class CliQuant : public test::CheckpointTest {
 protected:
  CliQuant() : CheckpointTest("cli-quant") {}
};

TEST_F(CliQuant, ExportWritesInt8AndInt4ProgramsThatRun) {
  const std::string ckpt = test::cached_checkpoint("tiny", 2);
  for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
           {"--weights-dtype", "int8"}, {"--weights-dtype", "int4", "--group-size", "32"}}) {
    SCOPED_TRACE(flags[1]);
    const std::string out = dir.file(flags[1] + ".hfs");
    std::vector<std::string> args = {"export", ckpt, "-o", out, "--max-context", "32", "--prefill-len", "8"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto r = test::run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto p = Program::load(out);
    EXPECT_EQ(p->metadata()["weights_dtype"], flags[1]);
    EXPECT_EQ(p->weight("lm_head.weight").info->dtype, flags[1] == "int8" ? DType::I8 : DType::U8);
    r = test::run_cli({"inspect", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("format version 3"));
    EXPECT_TRUE(std::regex_search(r.out, std::regex("tensor lm_head.weight +" + flags[1] +
                                                    " +\\[272, 64\\] .* group 32, scales lm_head.weight.scales")))
        << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("tensor lm_head.weight.scales +float16 +\\[272, 2\\] .* scales of "
                                                    "lm_head.weight")))
        << r.out;
    EXPECT_THAT(r.out, HasSubstr(cat(flags[1], " ")));
    r = test::run_cli({"validate", out});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    r = test::run_cli({"run", "-m", out, "-p", "Hello", "-n", "4"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
}

// A version 2 program (tiny-gemma3: window 6, shorter than the context) quantized to int4: its
// (1 + w) norm weights stay float32, and it loads and generates from the command line.
TEST_F(CliQuant, Int4SlidingWindowProgramRuns) {
  const std::string ckpt = test::cached_checkpoint("tiny-gemma3", 2), out = dir.file("gemma3-int4.hfs");
  auto r = test::run_cli({"export", ckpt, "-o", out, "--max-context", "64", "--prefill-len", "8", "--weights-dtype",
                          "int4", "--group-size", "32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = Program::load(out);
  EXPECT_EQ(p->metadata()["version"], 2);
  EXPECT_EQ(p->metadata()["weights_dtype"], "int4");
  EXPECT_EQ(p->weight("model.layers.0.mlp.down_proj.weight").info->dtype, DType::U8);
  EXPECT_EQ(p->weight("model.embed_tokens.weight").info->dtype, DType::U8);
  EXPECT_EQ(p->weight("model.layers.0.pre_feedforward_layernorm.weight").info->dtype, DType::F32);
  r = test::run_cli({"run", "-m", out, "-p", "Hello there, friend", "-n", "20", "--ignore-eos", "-t", "1", "--stats"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("generated 20 tokens"));
}

TEST_F(CliQuant, ExportFlagErrors) {
  const std::string ckpt = test::cached_checkpoint("tiny", 2), out = dir.file("bad.hfs");
  auto r = test::run_cli({"export", ckpt, "-o", out, "--group-size", "64"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("flag --group-size: only with --weights-dtype int8 or int4"));
  r = test::run_cli({"export", ckpt, "-o", out, "--weights-dtype", "float16", "--group-size", "32"});
  EXPECT_EQ(r.exit_code, 2);
  r = test::run_cli({"export", ckpt, "-o", out, "--weights-dtype", "int4", "--group-size", "96"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("flag --group-size: 96 is not one of 32, 64 or 128"));
  // tiny's 160-wide down projection takes groups of 32 only, its 64-wide matrices 32 or 64.
  r = test::run_cli({"export", ckpt, "-o", out, "--weights-dtype", "int4", "--group-size", "64"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("tensor 'model.layers.0.mlp.down_proj.weight' [64, 160] has 160 input features, not "
                               "a multiple of --group-size 64 (group sizes that fit: 32)"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  r = test::run_cli({"export", ckpt, "-o", out, "--weights-dtype", "int8", "--group-size", "128"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("tensor 'model.embed_tokens.weight' [272, 64] has 64 input features, not a multiple "
                               "of --group-size 128 (group sizes that fit: 32, 64)"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  EXPECT_FALSE(fs::exists(out));
}

// "perplexity P +/- E, mean NLL M, N tokens scored in W windows of up to C"
struct Perplexity {
  double ppl = 0, error = 0, nll = 0;
  long tokens = 0, windows = 0;
};
Perplexity parse_perplexity(const std::string& out) {
  Perplexity p;
  std::smatch m;
  std::regex line(
      "perplexity ([0-9.]+) \\+/- ([0-9.]+), mean NLL ([0-9.]+), ([0-9]+) tokens scored in ([0-9]+) windows");
  if (!std::regex_search(out, m, line))
    ADD_FAILURE() << "no perplexity line in: " << out;
  else
    p = {std::stod(m[1]), std::stod(m[2]), std::stod(m[3]), std::stol(m[4]), std::stol(m[5])};
  return p;
}

TEST_F(CliQuant, PerplexityMatchesTheReferenceForFloatAndQuantizedPrograms) {
  const std::string ckpt = test::cached_checkpoint("tiny", 2);
  const std::string text = "In the beginning God created the heaven and the earth. And the earth was without form.";
  test::write_file(dir.file("text.txt"), text);
  const Tokenizer tok = Tokenizer::from_file(ckpt + "/tokenizer.json");
  const std::vector<int32_t> ids = tok.encode(text, /*add_special_tokens=*/false);
  ASSERT_GT(ids.size(), 40u);
  // The reference scores one window; two windows are two reference runs.
  auto reference_nll = [&](size_t begin, size_t end, const std::vector<std::string>& extra) {
    std::string list;
    for (size_t i = begin; i < end; ++i) list += cat(ids[i], " ");
    test::write_file(dir.file("ids.txt"), list);
    std::vector<std::string> flags = {"--perplexity-tokens", dir.file("ids.txt")};
    flags.insert(flags.end(), extra.begin(), extra.end());
    const auto ppl = test::reference(ckpt, {1}, 0, "float32", flags)["perplexity"];
    return std::pair{ppl["nll_mean"].get<double>() * ppl["count"].get<double>(), ppl["count"].get<long>()};
  };
  ::setenv("HFSTATIC_ISA", "scalar", 1);  // quantized products exactly as the reference computes them
  for (const std::string dtype : {"float32", "int8", "int4"}) {
    SCOPED_TRACE(dtype);
    const std::string out = dir.file(dtype + ".hfs");
    auto r = test::run_cli(
        {"export", ckpt, "-o", out, "--max-context", "128", "--prefill-len", "16", "--weights-dtype", dtype});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> extra =
        dtype == "float32" ? std::vector<std::string>{} : std::vector<std::string>{"--quantize", dtype};
    const auto [whole_sum, whole_count] = reference_nll(0, ids.size(), extra);
    r = test::run_cli({"perplexity", "-m", out, "-f", dir.file("text.txt"), "--threads", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Perplexity p = parse_perplexity(r.out);
    EXPECT_EQ(p.tokens, whole_count);
    EXPECT_EQ(p.windows, 1);
    EXPECT_NEAR(p.nll, whole_sum / double(whole_count), 1e-4);
    EXPECT_NEAR(p.ppl, std::exp(whole_sum / double(whole_count)), 1e-3 * p.ppl);
    EXPECT_GT(p.error, 0);
    // Windows of 24 tokens: each scored alone, from position 0.
    r = test::run_cli({"perplexity", "-m", out, "-f", dir.file("text.txt"), "--ctx", "24"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    p = parse_perplexity(r.out);
    double sum = 0;
    long count = 0;
    for (size_t begin = 0; begin + 1 < ids.size(); begin += 24) {
      const auto [s, n] = reference_nll(begin, std::min(ids.size(), begin + 24), extra);
      sum += s, count += n;
    }
    EXPECT_EQ(p.tokens, count);
    EXPECT_EQ(p.windows, long((ids.size() + 22) / 24));
    EXPECT_NEAR(p.nll, sum / double(count), 1e-4);
  }
  ::unsetenv("HFSTATIC_ISA");
  auto r = test::run_cli({"perplexity", "-m", dir.file("int8.hfs"), "-f", dir.file("text.txt"), "--ctx", "1"});
  EXPECT_EQ(r.exit_code, 2);
  r = test::run_cli({"perplexity", "-m", dir.file("int8.hfs")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("missing -f TEXT_FILE"));
}

}  // namespace
}  // namespace hfstatic
