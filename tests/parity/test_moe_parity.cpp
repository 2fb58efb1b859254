// Mixture-of-experts routing against the NumPy reference where it is decided by the rules
// alone: routers of zeros give every expert the same probability, so the top-k is the tie-break
// (the lower index first) and the weights are the family's renormalisation (or none).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "export/hf_config.h"
#include "io/hf_static_io_manager.h"
#include "test_support.h"

namespace hfstatic {
namespace {

bool is_router(const std::string& name) {
  return name.ends_with("block_sparse_moe.gate.weight") || name.ends_with("mlp.gate.weight");
}

// Expert number of a tensor name (".experts.J."), or -1.
int64_t expert_of(const std::string& name) {
  const size_t at = name.find(".experts.");
  return at == std::string::npos ? -1 : std::stoll(name.substr(at + 9));
}

// A copy of the float32 tiny checkpoint `preset` in `dir` with edit(name, values) applied to
// each tensor, which may rename it.
std::string edited_checkpoint(const std::string& preset, const std::string& dir,
                              const std::function<void(std::string&, std::vector<float>&)>& edit) {
  std::filesystem::copy(test::cached_checkpoint(preset, 7), dir, std::filesystem::copy_options::recursive);
  test::rewrite_tensors(dir, [&](test::TensorBytes t) {
    std::vector<float> values = test::f32_values(t);
    edit(t.name, values);
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return std::vector{std::move(t)};
  });
  return dir;
}

struct Logits {
  std::vector<std::vector<float>> prompt, greedy;
};

const std::vector<int64_t> kPrompt = {256, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114};
constexpr int kSteps = 8;

// Every prompt row's logits, then those of kSteps decode steps fed the reference's tokens.
Logits run_program(const std::string& ckpt, const std::string& out, const std::vector<int64_t>& tokens) {
  GraphOptions g;
  g.prefill_len = 8;
  g.max_context = 64;
  auto io = IOManagerRegistry::instance().load(Program::load(test::export_to(ckpt, out, g)));
  auto& hf = dynamic_cast<HfStaticIOManager&>(*io);
  hf.set_all_logits(true);
  const int64_t V = io->model().vocab_size;
  Logits got;
  for (const Step& s : io->plan(0, kPrompt.size())) {
    EXPECT_TRUE(io->step(s.kind, s.start_pos, std::span(kPrompt).subspan(s.begin, s.count), nullptr).ok());
    const float* all = static_cast<const float*>(hf.execution(StepKind::Prefill).output_data(3 * io->model().n_layers));
    for (size_t r = 0; r < s.count; ++r) got.prompt.emplace_back(all + r * V, all + (r + 1) * V);
  }
  int64_t pos = int64_t(kPrompt.size());
  for (int64_t token : tokens) {
    got.greedy.emplace_back(io->logits().begin(), io->logits().end());
    std::vector<int64_t> one = {token};
    EXPECT_TRUE(io->step(StepKind::Decode, pos++, one, nullptr).ok());
  }
  return got;
}

// The largest relative error of any row against the reference's.
double worst_error(const Logits& got, const nlohmann::json& ref) {
  double worst = 0;
  for (size_t i = 0; i < got.prompt.size(); ++i)
    worst = std::max(worst, test::relative_error(got.prompt[i], ref["prompt_logits"][i].get<std::vector<double>>()));
  for (size_t i = 0; i < got.greedy.size(); ++i)
    worst = std::max(worst, test::relative_error(got.greedy[i], ref["greedy_logits"][i].get<std::vector<double>>()));
  return worst;
}

struct TieCase {
  std::string preset;
  bool renormalises;
};

void PrintTo(const TieCase& c, std::ostream* os) { *os << c.preset; }

class RouterTies : public testing::TestWithParam<TieCase> {};

TEST_P(RouterTies, EqualScoresPickTheLowestExpertsWithTheFamilysWeights) {
  const TieCase& c = GetParam();
  test::TempDir dir("moe-ties");
  const std::string ckpt = edited_checkpoint(c.preset, dir.file("zero-router"), [](std::string& n, auto& v) {
    if (is_router(n)) std::fill(v.begin(), v.end(), 0.0f);
  });
  const nlohmann::json ref = test::reference(ckpt, kPrompt, kSteps);
  const Logits got = run_program(ckpt, dir.file("p.hfs"), ref["greedy_tokens"].get<std::vector<int64_t>>());
  EXPECT_LE(worst_error(got, ref), 1e-4);

  // The comparison decides something: the highest experts in place of the lowest give other
  // logits, and so do top-k weights without the renormalisation where the family has one.
  const int64_t experts =
      HfConfig::parse(nlohmann::json::parse(read_text_file(ckpt + "/config.json")), "config.json").moe->experts;
  ASSERT_GT(experts, 1);
  // Expert J's tensors become expert (experts - 1 - J)'s.
  const std::string reversed = edited_checkpoint(c.preset, dir.file("reversed"), [&](std::string& n, auto& v) {
    if (is_router(n)) std::fill(v.begin(), v.end(), 0.0f);
    if (const int64_t e = expert_of(n); e >= 0) {
      const size_t at = n.find(".experts.") + 9;
      n = n.substr(0, at) + std::to_string(experts - 1 - e) + n.substr(n.find('.', at));
    }
  });
  EXPECT_GT(worst_error(got, test::reference(reversed, kPrompt, kSteps)), 1e-2);
  const double naive = worst_error(got, test::reference(ckpt, kPrompt, kSteps, "float32", {"--moe-router", "naive"}));
  if (c.renormalises)
    EXPECT_GT(naive, 1e-2);
  else
    EXPECT_LE(naive, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Families, RouterTies,
                         testing::Values(TieCase{"tiny-mixtral", true}, TieCase{"tiny-qwen2-moe", false},
                                         TieCase{"tiny-qwen3-moe", true}, TieCase{"tiny-olmoe", false}),
                         [](const auto& info) {
                           std::string n = info.param.preset;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// Prefill and decode compute the chosen experts only: with ties sending every token to the
// lowest experts, the others may hold NaN without reaching a single logit.
TEST(MoeExperts, ExpertsNoTokenChoosesAreNeverComputed) {
  test::TempDir dir("moe-unread");
  auto zero_routers = [](std::string& n, std::vector<float>& v) {
    if (is_router(n)) std::fill(v.begin(), v.end(), 0.0f);
  };
  const std::string ckpt = edited_checkpoint("tiny-mixtral", dir.file("plain"), zero_routers);
  const std::string poisoned = edited_checkpoint("tiny-mixtral", dir.file("nan"), [&](std::string& n, auto& v) {
    zero_routers(n, v);
    if (expert_of(n) >= 2) std::fill(v.begin(), v.end(), std::nanf(""));  // top 2 of 4: experts 0 and 1
  });
  const nlohmann::json ref = test::reference(ckpt, kPrompt, kSteps);
  const Logits got = run_program(poisoned, dir.file("p.hfs"), ref["greedy_tokens"].get<std::vector<int64_t>>());
  for (const auto& rows : {got.prompt, got.greedy})
    for (const auto& row : rows)
      ASSERT_TRUE(std::all_of(row.begin(), row.end(), [](float x) { return std::isfinite(x); }));
  EXPECT_LE(worst_error(got, ref), 1e-4);
}

// Qwen2MoeConfig's qkv_bias (true by default) false: q/k/v without biases, as the reference
// reads it; before, the exporter asked for the biases and failed.
TEST(MoeAttention, Qwen2MoeWithoutQkvBiasMatchesTheReference) {
  test::TempDir dir("moe-qkv-bias");
  const std::string ckpt = dir.file("ckpt");
  std::filesystem::copy(test::cached_checkpoint("tiny-qwen2-moe", 7), ckpt, std::filesystem::copy_options::recursive);
  test::rewrite_tensors(ckpt, [](test::TensorBytes t) {
    if (t.name.ends_with("_proj.bias")) return std::vector<test::TensorBytes>{};
    return std::vector{std::move(t)};
  });
  test::CheckpointTest::edit_config(ckpt, [](nlohmann::json& config) { config["qkv_bias"] = false; });
  const nlohmann::json ref = test::reference(ckpt, kPrompt, kSteps);
  const Logits got = run_program(ckpt, dir.file("p.hfs"), ref["greedy_tokens"].get<std::vector<int64_t>>());
  EXPECT_LE(worst_error(got, ref), 1e-4);
}

// A quantized moe node has hundreds of operands; the token axis is read from its first only.
TEST(MoeExperts, AQuantizedMoeMethodKeepsItsTokenAxis) {
  test::TempDir dir("moe-axis");
  ExportOptions o;
  o.graph.prefill_len = 8;
  o.graph.max_context = 64;
  o.quant = WeightQuant{DType::I4, 32};
  export_program(test::cached_checkpoint("tiny-qwen3-moe", 7), dir.file("q4.hfs"), o);
  const test::CommandResult r = test::run_cli({"inspect", dir.file("q4.hfs"), "--plan"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("token axis 8 rows"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hfstatic
