#include "format/program.h"

#include "util/error.h"
#include "util/json_limits.h"

namespace hfstatic {

std::shared_ptr<const Program> Program::load(const std::string& path, PagePolicy policy) {
  return load_mapped(MappedFile::open(path, policy));
}

std::shared_ptr<const Program> Program::load_memory(const uint8_t* data, size_t size, const std::string& name) {
  return load_mapped(MappedFile::borrow(data, size, name));
}

std::shared_ptr<const Program> Program::load_mapped(MappedFile file) {
  auto p = std::make_shared<Program>();
  p->file_ = std::move(file);
  const std::string path = p->file_.path();
  SafetensorsOptions options;
  options.require_alignment = true;
  p->view_ = SafetensorsView::parse(p->file_.data(), p->file_.size(), path, options);
  auto it = p->view_.metadata().find(kProgramMetadataKey);
  if (it == p->view_.metadata().end())
    fail(path, ": not an hfstatic program (safetensors __metadata__ has no '", kProgramMetadataKey, "' entry)");
  std::string why;
  nlohmann::json j =
      parse_json_limited(it->second, cat(path, ": __metadata__.", kProgramMetadataKey), kMaxJsonDepth, &why);
  if (j.is_discarded()) fail(path, ": __metadata__.", kProgramMetadataKey, " is not valid JSON ", why);
  try {
    p->spec_ = ProgramSpec::from_json(j);
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
  for (const TensorInfo& t : p->view_.tensors()) {
    if (t.name.rfind(kEmbeddedFilePrefix, 0) == 0 && (t.dtype != DType::U8 || t.shape.size() != 1))
      fail(path, ": embedded file tensor '", t.name, "' is ", dtype_name(t.dtype), " ", shape_str(t.shape),
           "; embedded files are uint8 vectors");
    if (t.dtype == DType::I8 && p->spec_.format_version < kQuantizedFormatVersion)
      fail(path, ": tensor '", t.name, "' is int8, a quantized weight, but the program claims format_version ",
           p->spec_.format_version, "; quantized programs are format_version ", kQuantizedFormatVersion);
  }
  return p;
}

WeightRef Program::weight(const std::string& name) const {
  if (name.rfind(kEmbeddedFilePrefix, 0) == 0) return {};
  const TensorInfo* t = view_.find(name);
  if (!t) return {};
  return {t, view_.tensor_data(*t)};
}

std::string Program::embedded_file(const std::string& name) const {
  const TensorInfo* t = view_.find(kEmbeddedFilePrefix + name);
  if (!t || t->dtype != DType::U8) return {};
  const uint8_t* d = view_.tensor_data(*t);
  return std::string(reinterpret_cast<const char*>(d), t->size);
}

uint64_t Program::weight_bytes() const {
  uint64_t total = 0;
  for (const auto& t : view_.tensors())
    if (t.name.rfind(kEmbeddedFilePrefix, 0) != 0) total += t.size;
  return total;
}

std::string program_embedded_file(const std::string& program_path, const std::string& name) {
  return Program::load(program_path, PagePolicy::Plain)->embedded_file(name);
}

namespace {
void check_weight_name(const std::string& name) {
  if (name.rfind(kEmbeddedFilePrefix, 0) == 0)
    fail("weight name '", name, "' uses the reserved prefix ", kEmbeddedFilePrefix);
}
}  // namespace

void ProgramWriter::add_weight(const std::string& name, DType dtype, const Shape& shape,
                               SafetensorsWriter::Producer producer) {
  check_weight_name(name);
  writer_.add(name, dtype, shape, std::move(producer));
}

void ProgramWriter::add_weight_bytes(const std::string& name, DType dtype, const Shape& shape,
                                     std::vector<uint8_t> bytes) {
  check_weight_name(name);
  writer_.add_bytes(name, dtype, shape, std::move(bytes));
}

void ProgramWriter::add_file(const std::string& name, const std::string& bytes) {
  writer_.add_bytes(kEmbeddedFilePrefix + name, DType::U8, {int64_t(bytes.size())},
                    std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

void ProgramWriter::write(const std::string& path, const std::function<void(uint64_t, uint64_t)>& progress) {
  writer_.set_metadata(kProgramMetadataKey, spec_.to_json().dump());
  writer_.write(path, progress);
}

}  // namespace hfstatic
