#include "export/exporter.h"

#include <cstring>
#include <vector>

#include "chat/text_check.h"
#include "contract/hf_static_contract.h"
#include "export/checkpoint.h"
#include "format/program.h"
#include "util/error.h"

namespace hfstatic {

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
  built.spec.metadata[hf_static::keys::weights_dtype] = dtype_name(weights_dtype);

  ProgramWriter writer(std::move(built.spec));
  ExportSummary summary;
  for (const WeightUse& w : built.weights) {
    Shape shape = w.shape;
    std::string name = w.name;
    if (w.plus_one) {  // 1 + w computed in float32, as the model's norm does, and kept in float32
      const size_t n = size_t(*shape_numel(shape));
      writer.add_weight(name, DType::F32, shape, [&ckpt, name, n](uint8_t* dst) {
        std::vector<float> values(n);
        ckpt.read(name, DType::F32, reinterpret_cast<uint8_t*>(values.data()));
        for (float& v : values) v += 1.0f;
        std::memcpy(dst, values.data(), n * sizeof(float));
      });
    } else {
      writer.add_weight(name, weights_dtype, shape,
                        [&ckpt, name, weights_dtype](uint8_t* dst) { ckpt.read(name, weights_dtype, dst); });
    }
    summary.weight_bytes += uint64_t(*shape_numel(shape)) * dtype_size(w.plus_one ? DType::F32 : weights_dtype);
    ++summary.tensors;
  }
  for (const char* side : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    std::string bytes = ckpt.side_file(side);
    if (!bytes.empty()) writer.add_file(side, bytes);
  }
  writer.add_file("config.json", ckpt.raw_config().dump(2));
  writer.write(out_path, options.progress);
  summary.file_bytes = Program::load(out_path, PagePolicy::Plain)->file_size();
  return summary;
}

}  // namespace hfstatic
