// Quantized export: the values and layout quantize_matrix writes (hand-computed), the graph
// rewritten to read every linear and embedding weight with its scales, and widths a group
// size does not divide refused before anything is written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "export/exporter.h"
#include "export/quantize.h"
#include "format/program.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using test::error_of;
using testing::HasSubstr;

TEST(QuantizeMatrix, Int8RoundsToNearestEvenWithScaleOne) {
  // max|x| = 127: scale 127 / 127 = 1, exact in float16, so q = rint(x), ties to even.
  std::vector<float> x(32, 0.0f);
  x[0] = 127, x[1] = -127, x[2] = 2.5f, x[3] = 3.5f, x[4] = -2.5f, x[5] = 0.4f, x[6] = -0.6f, x[31] = 100.49f;
  std::vector<uint8_t> packed(32);
  std::vector<uint16_t> scales(1);
  quantize_matrix("w", x.data(), 1, 32, WeightQuant{DType::I8, 32}, packed.data(), scales.data());
  EXPECT_EQ(scales[0], 0x3c00);  // float16 1.0
  const int8_t want[] = {127, -127, 2, 4, -2, 0, -1};
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(int8_t(packed[i]), want[i]) << i;
  EXPECT_EQ(int8_t(packed[31]), 100);
}

TEST(QuantizeMatrix, Int4PacksBlocksOfThirtyTwoInNibbles) {
  // Two rows of 64 = two blocks each. Row 0: max 7 -> scale 1, x[i] = (i % 15) - 7. Row 1: all
  // zero -> scale 0, every value 0 (stored 8).
  std::vector<float> x(128, 0.0f);
  for (int i = 0; i < 64; ++i) x[size_t(i)] = float(i % 15 - 7);
  std::vector<uint8_t> packed(64);
  std::vector<uint16_t> scales(4);
  quantize_matrix("w", x.data(), 2, 64, WeightQuant{DType::I4, 32}, packed.data(), scales.data());
  EXPECT_EQ(scales[0], 0x3c00);
  EXPECT_EQ(scales[1], 0x3c00);
  EXPECT_EQ(scales[2], 0);
  EXPECT_EQ(scales[3], 0);
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 16; ++j) {
      const int lo = (32 * b + j) % 15 - 7, hi = (32 * b + j + 16) % 15 - 7;
      EXPECT_EQ(packed[size_t(16 * b + j)], uint8_t((lo + 8) | ((hi + 8) << 4))) << "block " << b << " byte " << j;
      EXPECT_EQ(packed[size_t(32 + 16 * b + j)], 0x88);
    }
}

TEST(QuantizeMatrix, GroupsInterleaveFourBytesAtATimeInBlocksOfEight) {
  // One int8 row of 9 groups of 32: group g holds 127 (scale 1), then v + 3g at value v. Groups
  // 0-7 form a block, bytes 4c .. 4c + 3 of group j at 32c + 4j; group 8 follows at 256.
  std::vector<float> x(288);
  for (int g = 0; g < 9; ++g)
    for (int v = 0; v < 32; ++v) x[size_t(32 * g + v)] = v == 0 ? 127.0f : float(v + 3 * g);
  std::vector<uint8_t> packed(288);
  std::vector<uint16_t> scales(9);
  quantize_matrix("w", x.data(), 1, 288, WeightQuant{DType::I8, 32}, packed.data(), scales.data());
  EXPECT_EQ(packed[0], 127);    // group 0 value 0
  EXPECT_EQ(packed[1], 1);      // group 0 value 1
  EXPECT_EQ(packed[4], 127);    // group 1 value 0
  EXPECT_EQ(packed[5], 4);      // group 1 value 1
  EXPECT_EQ(packed[32], 4);     // group 0 value 4
  EXPECT_EQ(packed[255], 52);   // group 7 value 31
  EXPECT_EQ(packed[256], 127);  // group 8 value 0
  EXPECT_EQ(packed[266], 34);   // group 8 value 10
  // int4, 8 groups of 32 (16 bytes each): byte 4c + e of group j holds values 4c + e (low
  // nibble) and 4c + e + 16 (high), at 32c + 4j. Values: 7 first (scale 1), then v % 15 - 7.
  std::vector<float> y(256);
  for (int g = 0; g < 8; ++g)
    for (int v = 0; v < 32; ++v) y[size_t(32 * g + v)] = v == 0 ? 7.0f : float((v + g) % 15 - 7);
  std::vector<uint8_t> packed4(128);
  quantize_matrix("w", y.data(), 1, 256, WeightQuant{DType::I4, 32}, packed4.data(), scales.data());
  auto stored = [&](int g, int v) { return y[size_t(32 * g + v)] + 8; };
  EXPECT_EQ(packed4[0], uint8_t(stored(0, 0) + 16 * stored(0, 16)));
  EXPECT_EQ(packed4[6], uint8_t(stored(1, 2) + 16 * stored(1, 18)));
  EXPECT_EQ(packed4[127], uint8_t(stored(7, 15) + 16 * stored(7, 31)));
}

TEST(QuantizeMatrix, ScaleIsTheFloat16RoundedMaximumOverTheLevels) {
  // max|x| = 1: scale float16(1 / 7) = 0x3092 (0.142822...); 1 / 0.142822 = 7.0017 -> 7, and
  // 0.5 / 0.142822 = 3.5008 -> 4, computed from the rounded scale.
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f, x[1] = 0.5f;
  std::vector<uint8_t> packed(16);
  std::vector<uint16_t> scales(1);
  quantize_matrix("w", x.data(), 1, 32, WeightQuant{DType::I4, 32}, packed.data(), scales.data());
  EXPECT_EQ(scales[0], 0x3092);
  EXPECT_EQ(packed[0] & 0xf, 7 + 8);
  EXPECT_EQ(packed[1] & 0xf, 4 + 8);
}

TEST(QuantizeMatrix, NonFiniteWeightsAreAnErrorNamingTheTensor) {
  std::vector<float> x(64, 1.0f);
  x[40] = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint16_t> scales(2);
  EXPECT_THAT(error_of([&] {
                quantize_matrix("model.norm", x.data(), 1, 64, WeightQuant{DType::I8, 32}, nullptr, scales.data());
              }),
              HasSubstr("tensor 'model.norm' holds nan at [0, 40]; only finite weights quantize"));
}

TEST(QuantizedExport, EveryLinearAndEmbeddingWeightIsQuantizedWithItsScales) {
  test::TempDir dir("export-quant");
  ExportOptions o;
  o.graph.prefill_len = 4;
  o.graph.max_context = 16;
  o.quant = WeightQuant{DType::I4, 64};
  // tiny-llama3 ties its logits to the embedding table.
  export_program(test::cached_checkpoint("tiny-llama3", 1), dir.file("q.hfs"), o);
  auto p = Program::load(dir.file("q.hfs"));
  EXPECT_EQ(p->spec().format_version, 3);
  EXPECT_EQ(p->metadata()["weights_dtype"], "int4");
  const TensorInfo* embed = p->weight("model.embed_tokens.weight").info;
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->dtype, DType::U8);
  EXPECT_EQ(embed->shape, (Shape{272, 32}));
  const TensorInfo* embed_scales = p->weight("model.embed_tokens.weight.scales").info;
  ASSERT_NE(embed_scales, nullptr);
  EXPECT_EQ(embed_scales->dtype, DType::F16);
  EXPECT_EQ(embed_scales->shape, (Shape{272, 1}));
  EXPECT_EQ(p->weight("lm_head.weight").info, nullptr);
  EXPECT_EQ(p->weight("model.norm.weight").info->dtype, DType::F32);
  int quantized_nodes = 0;
  for (const NodeSpec& n : p->spec().find_method("prefill")->nodes) {
    if (n.op != "linear" && n.op != "embedding") continue;
    ++quantized_nodes;
    ASSERT_GE(n.inputs.size(), 3u);
    EXPECT_EQ(n.inputs[2], n.inputs[1] + ".scales");
    EXPECT_EQ(n.attrs["weight_dtype"], "int4");
    EXPECT_EQ(n.attrs["group_size"], 64);
    EXPECT_EQ(p->weight(n.inputs[1]).info->dtype, DType::U8);
  }
  EXPECT_EQ(quantized_nodes, 1 + 2 * 7 + 1);  // embedding, 7 linears a layer, logits
}

TEST(QuantizedExport, AGroupSizeThatDoesNotDivideAWidthNamesTheTensorAndTheSizesThatFit) {
  test::TempDir dir("export-quant");
  ExportOptions o;
  o.quant = WeightQuant{DType::I8, 64};
  // tiny: intermediate_size 160, which 32 divides and 64 does not.
  const std::string e = error_of([&] { export_program(test::cached_checkpoint("tiny", 1), dir.file("q.hfs"), o); });
  EXPECT_THAT(e, HasSubstr("tensor 'model.layers.0.mlp.down_proj.weight' [64, 160] has 160 input features, not a "
                           "multiple of --group-size 64 (group sizes that fit: 32)"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("q.hfs")));
}

}  // namespace
}  // namespace hfstatic
