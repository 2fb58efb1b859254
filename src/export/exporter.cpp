#include "export/exporter.h"

#include <cstring>
#include <set>
#include <vector>

#include "chat/text_check.h"
#include "contract/hf_static_contract.h"
#include "export/checkpoint.h"
#include "export/quantize.h"
#include "format/program.h"
#include "util/error.h"

namespace hfstatic {
namespace {

// Adds a quantized weight and its scales, each computed from a float32 copy of the checkpoint
// tensor made when the writer asks for it; returns their bytes.
uint64_t add_quantized_weight(ProgramWriter& writer, const HfCheckpoint& ckpt, const WeightUse& w,
                              const WeightQuant& q) {
  const int64_t rows = w.shape[0], cols = w.shape[1];
  auto quantize = [&ckpt, w, q, rows, cols](uint8_t* packed, uint16_t* scales) {
    std::vector<float> x(size_t(rows * cols));
    ckpt.read_rows(w.source.empty() ? w.name : w.source, w.source_row, rows, DType::F32, x.data());
    quantize_matrix(w.name, x.data(), rows, cols, q, packed, scales);
  };
  const Shape packed_shape = quantized_storage_shape(q, w.shape), scales_shape = {rows, cols / q.group};
  writer.add_weight(w.name, quantized_storage_dtype(q), packed_shape,
                    [quantize](uint8_t* dst) { quantize(dst, nullptr); });
  writer.add_weight(quant_scales_name(w.name), DType::F16, scales_shape,
                    [quantize](uint8_t* dst) { quantize(nullptr, reinterpret_cast<uint16_t*>(dst)); });
  return uint64_t(*shape_numel(packed_shape)) + uint64_t(*shape_numel(scales_shape)) * 2;
}

}  // namespace

ExportSummary export_program(const std::string& dir, const std::string& out_path, const ExportOptions& options) {
  HfCheckpoint ckpt = HfCheckpoint::open(dir);
  const HfConfig& config = ckpt.config();

  // Check every tensor before writing a byte.
  std::optional<DType> common;
  for (const WeightUse& w : expected_tensors(config)) {
    const TensorInfo& t = ckpt.info(w.name);
    if (t.shape != w.shape)
      fail(dir, ": tensor '", w.name, "' has shape ", shape_str(t.shape), " but config.json implies ",
           shape_str(w.shape));
    if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
      fail(dir, ": tensor '", w.name, "' has dtype ", dtype_name(t.dtype),
           "; weights must be float32, float16 or bfloat16");
    if (!common) common = t.dtype;
  }
  // The tokenizer and template are loaded as a runner will: a broken one fails the export.
  if (const std::string tokenizer = ckpt.side_file("tokenizer.json"); !tokenizer.empty()) {
    try {
      check_tokenizer_and_template(tokenizer, ckpt.side_file("tokenizer_config.json"));
    } catch (const Error& e) {
      fail(dir, ": ", e.what());
    }
  }
  const DType weights_dtype = options.weights_dtype.value_or(common.value_or(DType::F32));
  GraphOptions graph = options.graph;
  graph.weights_dtype = weights_dtype;
  BuiltProgram built = build_program(config, graph);
  std::set<std::string> quantized;
  if (options.quant) {
    try {
      quantized = quantize_graph(built.spec, *options.quant, built.weights);
    } catch (const Error& e) {
      fail(dir, ": ", e.what());
    }
  }
  built.spec.metadata[hf_static::keys::weights_dtype] =
      dtype_name(options.quant ? options.quant->dtype : weights_dtype);

  ProgramWriter writer(std::move(built.spec));
  ExportSummary summary;
  for (const WeightUse& w : built.weights) {
    if (quantized.count(w.name)) {
      summary.weight_bytes += add_quantized_weight(writer, ckpt, w, *options.quant);
      summary.tensors += 2;
      continue;
    }
    const Shape shape = w.shape;
    if (w.plus_one) {  // 1 + w computed in float32, as the model's norm does, and kept in float32
      const size_t n = size_t(*shape_numel(shape));
      const std::string source = w.source.empty() ? w.name : w.source;  // a multimodal checkpoint's name
      writer.add_weight(w.name, DType::F32, shape, [&ckpt, name = source, n](uint8_t* dst) {
        std::vector<float> values(n);
        ckpt.read(name, DType::F32, reinterpret_cast<uint8_t*>(values.data()));
        for (float& v : values) v += 1.0f;
        std::memcpy(dst, values.data(), n * sizeof(float));
      });
      summary.weight_bytes += uint64_t(n) * dtype_size(DType::F32);
      ++summary.tensors;
      continue;
    }
    // A weight cut from a fused tensor reads its rows of it; the others, the whole tensor.
    const std::string source = w.source.empty() ? w.name : w.source;
    const int64_t first_row = w.source_row, rows = shape.empty() ? 1 : shape[0];
    writer.add_weight(w.name, weights_dtype, shape, [&ckpt, source, first_row, rows, weights_dtype](uint8_t* dst) {
      ckpt.read_rows(source, first_row, rows, weights_dtype, dst);
    });
    summary.weight_bytes += uint64_t(*shape_numel(shape)) * dtype_size(weights_dtype);
    ++summary.tensors;
  }
  for (const char* side : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    std::string bytes = ckpt.side_file(side);
    if (!bytes.empty()) writer.add_file(side, bytes);
  }
  writer.add_file("config.json", ckpt.raw_config().dump(2));
  // A multimodal checkpoint's other towers: left out, and counted for the summary.
  if (const std::optional<TextModelLayout>& text = config.family->text_model) {
    summary.skipped_what = text->skipped_what;
    for (const std::string& name : ckpt.tensor_names())
      for (const std::string& prefix : text->skipped_prefixes)
        if (name.rfind(prefix, 0) == 0) {
          ++summary.skipped_tensors;
          break;
        }
  }
  writer.write(out_path, options.progress);
  summary.file_bytes = Program::load(out_path, PagePolicy::Plain)->file_size();
  return summary;
}

}  // namespace hfstatic
