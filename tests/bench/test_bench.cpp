// The benchmark behind `hfstatic bench`, run on a tiny program: the report holds every number
// the documentation promises, and the derived ones agree with what they are derived from.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/bench.h"
#include "format/program.h"
#include "kernels/isa.h"
#include "kernels/thread_pool.h"
#include "test_support.h"
#include "util/error.h"

namespace hfstatic {
namespace {

using nlohmann::json;

void expect_stats(const json& s, const std::string& what) {
  EXPECT_GT(s["min"].get<double>(), 0) << what;
  EXPECT_LE(s["min"].get<double>(), s["median"].get<double>()) << what;
  EXPECT_LE(s["median"].get<double>(), s["max"].get<double>()) << what;
}

bench::BenchOptions tiny_options(test::TempDir& dir) {
  GraphOptions g;
  g.prefill_len = 8;
  g.max_context = 64;
  bench::BenchOptions o;
  o.path = test::export_to(test::cached_checkpoint("tiny"), dir.file("p.hfs"), g);
  o.prompt = 12;  // one prefill chunk, then a tail through decode
  o.gen = 6;
  o.reps = 3;
  o.threads = 2;
  o.bandwidth_bytes = uint64_t(32) << 20;
  return o;
}

TEST(Bench, ReportsThroughputCeilingsAndRatiosThatAgree) {
  test::TempDir dir("bench");
  const json j = bench::run_bench(tiny_options(dir)).json;
  EXPECT_EQ(j["threads"].get<int>(), 2);

  const json& pp = j["pp"];
  EXPECT_EQ(pp["tokens"].get<int64_t>(), 12);
  expect_stats(pp["tokens_per_s"], "pp tokens/s");
  EXPECT_GT(pp["flops_per_run"].get<double>(), 0);
  EXPECT_NEAR(pp["gflops"].get<double>(),
              pp["flops_per_run"].get<double>() / 12 * pp["tokens_per_s"]["median"].get<double>() / 1e9,
              1e-9 * pp["gflops"].get<double>());

  const json& tg = j["tg"];
  EXPECT_EQ(tg["tokens"].get<int64_t>(), 6);
  EXPECT_EQ(tg["context_start"].get<int64_t>(), 12);
  expect_stats(tg["tokens_per_s"], "tg tokens/s");
  // A decode step reads every matrix once (at least 2 bytes a parameter), one embedding row and
  // part of the caches: no more than all weights and caches.
  const json& m = j["model"];
  EXPECT_GE(tg["bytes_per_token"].get<double>(), 2.0 * m["linear_params"].get<double>());
  EXPECT_LE(tg["bytes_per_token"].get<double>(), m["weight_bytes"].get<double>() + m["cache_bytes"].get<double>());
  EXPECT_NEAR(tg["gbps"].get<double>(),
              tg["bytes_per_token"].get<double>() * tg["tokens_per_s"]["median"].get<double>() / 1e9,
              1e-9 * tg["gbps"].get<double>());

  const json& mc = j["machine"];
  EXPECT_GT(mc["read_gbps"].get<double>(), 0);
  EXPECT_GT(mc["fma_gflops"].get<double>(), 0);
  EXPECT_GT(mc["region_handover_us"].get<double>(), 0);  // two threads hand each region over
  EXPECT_NEAR(tg["fraction_of_bandwidth"].get<double>(), tg["gbps"].get<double>() / mc["read_gbps"].get<double>(),
              1e-9);
  EXPECT_NEAR(pp["fraction_of_peak"].get<double>(), pp["gflops"].get<double>() / mc["fma_gflops"].get<double>(), 1e-9);
  expect_stats(tg["fraction_of_bandwidth_paired"], "paired decode/bandwidth ratio");
  expect_stats(pp["fraction_of_peak_paired"], "paired prefill/FMA peak ratio");
  // Huge-page shares: fractions where smaps is readable, null where not.
  for (const json* f : {&j["load"]["huge_page_fraction"], &mc["bandwidth_huge_page_fraction"]}) {
    ASSERT_TRUE(f->is_null() || f->is_number()) << f->dump();
    if (f->is_number()) {
      EXPECT_GE(f->get<double>(), 0.0);
      EXPECT_LE(f->get<double>(), 1.0);
    }
  }

  const json& mem = j["memory"];
  EXPECT_GT(mem["peak_rss_bytes"].get<double>(), mem["weights_plus_caches_bytes"].get<double>() * 0.5);
  EXPECT_EQ(mem["within_budget"].get<bool>(), mem["peak_rss_bytes"].get<double>() <= mem["budget_bytes"].get<double>());
}

TEST(Bench, ARegionsHandOverCostsNothingOnOneThread) {
  EXPECT_EQ(bench::region_handover_us(nullptr, 10, 1), 0.0);
  ThreadPool one(1), two(2);
  EXPECT_EQ(bench::region_handover_us(&one, 10, 1), 0.0);
  EXPECT_GT(bench::region_handover_us(&two, 10, 2), 0.0);
}

TEST(Bench, WithoutCeilingsThereAreNoRatios) {
  test::TempDir dir("bench");
  bench::BenchOptions o = tiny_options(dir);
  o.ceilings = false;
  const json j = bench::run_bench(o).json;
  EXPECT_FALSE(j.contains("machine"));
  EXPECT_FALSE(j["tg"].contains("fraction_of_bandwidth"));
  EXPECT_FALSE(j["tg"].contains("fraction_of_bandwidth_paired"));
  EXPECT_FALSE(j["pp"].contains("fraction_of_peak"));
  EXPECT_FALSE(j["pp"].contains("fraction_of_peak_paired"));
}

// The record names the kernel level the methods ran and the CPU features behind it: a forced
// level is the one recorded, and the features are those the CPU reports.
TEST(Bench, RecordsTheKernelLevelAndTheCpuFeatures) {
  test::TempDir dir("bench");
  bench::BenchOptions o = tiny_options(dir);
  o.ceilings = false;
  o.gen = 2;
  o.reps = 1;
  for (kernels::Isa isa : {kernels::Isa::Scalar, kernels::best_isa()}) {
    o.runtime.isa = isa;
    const json j = bench::run_bench(o).json;
    EXPECT_EQ(j["isa"].get<std::string>(), kernels::isa_name(isa));
    const std::string features = j["cpu_features"].get<std::string>();
    EXPECT_EQ(features.find("avx2") != std::string::npos, kernels::isa_supported(kernels::Isa::Avx2)) << features;
  }
}

// The logits' matrix is multiplied once a step (the IOManager computes the last real row
// only); every other matrix once a row.
TEST(Bench, PrefillCostCountsTheLogitsMatrixOncePerStep) {
  test::TempDir dir("bench");
  auto program = Program::load(tiny_options(dir).path);
  const bench::MethodCost c = bench::method_cost(*program, "prefill");
  const Shape& embedding = program->weight("model.embed_tokens.weight").info->shape;
  const double vocab = double(embedding[0]), hidden = double(embedding[1]);
  EXPECT_EQ(c.output_linear_params, vocab * hidden);
  EXPECT_GT(c.linear_params, c.output_linear_params);
  double attention_per_slot = 0;
  for (const auto& a : c.attention) attention_per_slot += 4.0 * double(a.n_heads * a.head_dim);
  ASSERT_FALSE(c.attention.empty());
  // Row 3 of a step from position 0 sees 3 cache slots.
  EXPECT_DOUBLE_EQ(c.flops(0, 3) - c.flops(0, 2),
                   2.0 * (c.linear_params - c.output_linear_params) + 3 * attention_per_slot);
  EXPECT_DOUBLE_EQ(c.flops(0, 1), 2.0 * c.linear_params + attention_per_slot);
}

// A quantized program does the same multiply-adds and reads its packed values and scales:
// int4 in groups of 32 is half a byte plus 2 / 32 bytes of scale a weight.
TEST(Bench, QuantizedWeightsCountTheirValuesAndScales) {
  test::TempDir dir("bench");
  ExportOptions o;
  o.graph.prefill_len = 8;
  o.graph.max_context = 64;
  o.weights_dtype = DType::F32;
  const std::string ckpt = test::cached_checkpoint("tiny", 1);
  export_program(ckpt, dir.file("f32.hfs"), o);
  o.quant = WeightQuant{DType::I4, 32};
  export_program(ckpt, dir.file("q4.hfs"), o);
  const bench::MethodCost f = bench::method_cost(*Program::load(dir.file("f32.hfs")), "decode");
  const bench::MethodCost q = bench::method_cost(*Program::load(dir.file("q4.hfs")), "decode");
  EXPECT_EQ(q.linear_params, f.linear_params);
  EXPECT_EQ(q.output_linear_params, f.output_linear_params);
  const double float_norm_bytes = f.weight_bytes - 4 * f.linear_params;  // norms: float32 in both
  EXPECT_DOUBLE_EQ(q.weight_bytes, q.linear_params * (0.5 + 2.0 / 32) + float_norm_bytes);
  EXPECT_DOUBLE_EQ(q.embedding_row_bytes, f.embedding_row_bytes / 4 * (0.5 + 2.0 / 32));
}

TEST(Bench, AMissingProgramIsAnErrorNamingIt) {
  bench::BenchOptions o;
  o.path = "/nonexistent/model.hfs";
  try {
    bench::run_bench(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.hfs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hfstatic
