#include "format/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_limits.h"
#include "util/mapped_file.h"

namespace hfstatic {

using nlohmann::json;

namespace {

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Dimensions beyond this are treated as corrupt even when the product would fit the file.
constexpr int64_t kMaxDim = int64_t(1) << 40;
constexpr size_t kMaxRank = 8;

}  // namespace

SafetensorsView SafetensorsView::parse(const uint8_t* data, size_t size, const std::string& origin,
                                       const SafetensorsOptions& options) {
  SafetensorsView v;
  if (size < 8) fail(origin, ": file is ", size, " bytes, too short for the 8-byte header length");
  uint64_t header_size = read_u64_le(data);
  if (header_size > size - 8)
    fail(origin, ": header length ", header_size, " runs past the end of the file (", size - 8,
         " bytes follow the length)");
  if (header_size > options.max_header_size)
    fail(origin, ": header length ", header_size, " exceeds the limit of ", options.max_header_size, " bytes");
  if (header_size < 2) fail(origin, ": header length ", header_size, " is too small for a JSON object");
  v.header_size_ = header_size;
  v.data_start_ = data + 8 + header_size;
  v.data_size_ = size - 8 - header_size;
  if (options.require_alignment && (8 + header_size) % 8 != 0)
    fail(origin, ": data area starts at byte ", 8 + header_size, ", not a multiple of 8");
  if (options.require_alignment && reinterpret_cast<uintptr_t>(data) % 8 != 0)
    fail(origin, ": held in memory at an address that is not a multiple of 8 (its tensors would be misaligned)");

  const char* text = reinterpret_cast<const char*>(data + 8);
  std::string why;
  json header = parse_json_limited(std::string_view(text, header_size), origin + ": header", kMaxJsonDepth, &why);
  if (header.is_discarded()) fail(origin, ": header is not valid JSON ", why);
  if (!header.is_object()) fail(origin, ": header is not a JSON object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json& entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(origin, ": __metadata__ is not an object");
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string()) fail(origin, ": __metadata__.", m.key(), " is not a string");
        v.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto where = [&](const char* field) { return cat(origin, ": tensor '", name, "' ", field); };
    if (!entry.is_object()) fail(where("entry"), " is not an object");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(key)) fail(where("has no"), " ", key);
    TensorInfo t;
    t.name = name;
    const json& dt = entry["dtype"];
    if (!dt.is_string()) fail(where("dtype"), " is not a string");
    auto dtype = dtype_from_safetensors_name(dt.get<std::string>());
    if (!dtype) fail(where("dtype"), " '", dt.get<std::string>(), "' is not supported (F32, F16, BF16, I64, I32, U8)");
    t.dtype = *dtype;
    const json& shape = entry["shape"];
    if (!shape.is_array()) fail(where("shape"), " is not an array");
    if (shape.size() > kMaxRank) fail(where("shape"), " has rank ", shape.size(), ", more than ", kMaxRank);
    for (const auto& d : shape) {
      if (!d.is_number_integer()) fail(where("shape"), " has a non-integer dimension");
      if (d.is_number_unsigned() ? d.get<uint64_t>() > uint64_t(kMaxDim)
                                 : d.get<int64_t>() < 0 || d.get<int64_t>() > kMaxDim)
        fail(where("shape"), " has dimension ", d.dump(), " outside [0, 2^40]");
      t.shape.push_back(d.get<int64_t>());
    }
    auto numel = shape_numel(t.shape);
    uint64_t bytes = 0;
    if (!numel || __builtin_mul_overflow(uint64_t(*numel), uint64_t(dtype_size(t.dtype)), &bytes))
      fail(where("shape"), " ", shape_str(t.shape), ": element count overflows");
    const json& off = entry["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail(where("data_offsets"), " is not a pair of non-negative integers");
    uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end) fail(where("data_offsets"), " [", begin, ", ", end, "] ends before it begins");
    if (end > v.data_size_)
      fail(where("data_offsets"), " [", begin, ", ", end, "] runs past the end of the data (", v.data_size_, " bytes)");
    if (end - begin != bytes)
      fail(where("size"), ": data_offsets span ", end - begin, " bytes but ", dt.get<std::string>(), " ",
           shape_str(t.shape), " needs ", bytes);
    if (options.require_alignment && begin % dtype_size(t.dtype) != 0)
      fail(where("data_offsets"), " begin ", begin, " is not aligned to its ", dtype_size(t.dtype), "-byte elements");
    t.offset = begin;
    t.size = bytes;
    v.index_[name] = v.tensors_.size();
    v.tensors_.push_back(std::move(t));
  }

  // No two tensors may share bytes.
  std::vector<const TensorInfo*> by_offset;
  for (const auto& t : v.tensors_)
    if (t.size > 0) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo* prev = by_offset[i - 1];
    if (by_offset[i]->offset < prev->offset + prev->size)
      fail(origin, ": tensor '", by_offset[i]->name, "' data overlaps tensor '", prev->name, "'");
  }
  return v;
}

const TensorInfo* SafetensorsView::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void SafetensorsWriter::add(const std::string& name, DType dtype, const Shape& shape, Producer producer) {
  if (name == "__metadata__") fail("safetensors: '__metadata__' cannot name a tensor");
  for (const auto& p : pending_)
    if (p.info.name == name) fail("safetensors: tensor '", name, "' added twice");
  auto numel = shape_numel(shape);
  if (!numel) fail("safetensors: tensor '", name, "' has an invalid shape ", shape_str(shape));
  TensorInfo info{name, dtype, shape, 0, uint64_t(*numel) * dtype_size(dtype)};
  pending_.push_back({std::move(info), std::move(producer)});
}

void SafetensorsWriter::add_bytes(const std::string& name, DType dtype, const Shape& shape,
                                  std::vector<uint8_t> bytes) {
  auto shared = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  auto numel = shape_numel(shape);
  if (!numel || uint64_t(*numel) * dtype_size(dtype) != shared->size())
    fail("safetensors: tensor '", name, "' has ", shared->size(), " bytes, not matching ", shape_str(shape));
  add(name, dtype, shape, [shared](uint8_t* dst) {
    if (!shared->empty()) std::memcpy(dst, shared->data(), shared->size());
  });
}

void SafetensorsWriter::write(const std::string& path, const std::function<void(uint64_t, uint64_t)>& progress) const {
  std::vector<const Pending*> order;
  for (const auto& p : pending_) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(),
                   [](auto* a, auto* b) { return dtype_size(a->info.dtype) > dtype_size(b->info.dtype); });
  json header = json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const Pending* p : order) {
    header[p->info.name] = {{"dtype", dtype_safetensors_name(p->info.dtype)},
                            {"shape", p->info.shape},
                            {"data_offsets", {offset, offset + p->info.size}}};
    offset += p->info.size;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 64 != 0) text.push_back(' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));

  AtomicFileWriter out(path);
  out.write(len, 8);
  out.write(text.data(), text.size());
  std::vector<uint8_t> buffer;
  uint64_t done = 0;
  for (const Pending* p : order) {
    buffer.assign(p->info.size, 0);
    if (p->info.size > 0) p->producer(buffer.data());
    out.write(buffer.data(), buffer.size());
    done += p->info.size;
    if (progress) progress(done, offset);
  }
  out.commit();
}

}  // namespace hfstatic
