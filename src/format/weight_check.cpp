#include "format/weight_check.h"

#include <cstring>
#include <map>

#include "util/error.h"

namespace hfstatic {

namespace {

enum class Value { Finite, Nan, Infinite, Zero };

Value classify(const uint8_t* p, DType t) {
  switch (t) {
    case DType::F32: {
      uint32_t b;
      std::memcpy(&b, p, 4);
      if ((b & 0x7f800000u) != 0x7f800000u) return (b & 0x7fffffffu) == 0 ? Value::Zero : Value::Finite;
      return (b & 0x007fffffu) ? Value::Nan : Value::Infinite;
    }
    case DType::F16:
    case DType::BF16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      const uint16_t exp = t == DType::F16 ? 0x7c00 : 0x7f80;
      if ((b & exp) != exp) return (b & 0x7fff) == 0 ? Value::Zero : Value::Finite;
      return (b & uint16_t(~exp & 0x7fff)) ? Value::Nan : Value::Infinite;
    }
    default: return Value::Finite;
  }
}

// "[r, c]" of flat index i in `shape`.
std::string position(int64_t i, const Shape& shape) {
  std::string out;
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = std::max<int64_t>(shape[d], 1);
    out = std::to_string(i % n) + (out.empty() ? "" : ", ") + out;
    i /= n;
  }
  return "[" + out + "]";
}

struct Counts {
  int64_t count = 0, first = -1;
  void add(int64_t i) {
    if (count++ == 0) first = i;
  }
};

}  // namespace

WeightCheck check_weights(const Program& program) {
  std::map<std::string, std::string> scales_of;  // scales tensor -> its weight
  for (const auto& m : program.spec().methods)
    for (const auto& node : m.nodes)
      for (const QuantizedOperand& q : quantized_operands(node)) scales_of.emplace(q.scales, q.weight);
  WeightCheck check;
  for (const TensorInfo& t : program.container().tensors()) {
    if (t.name.rfind(kEmbeddedFilePrefix, 0) == 0) continue;
    if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16) continue;  // packed values
    ++check.tensors;
    check.bytes += t.size;
    const bool scales = scales_of.count(t.name) > 0;
    const uint8_t* data = program.container().tensor_data(t);
    const size_t elem = dtype_size(t.dtype);
    const int64_t n = int64_t(t.size / elem);
    Counts nan, inf, zero;
    for (int64_t i = 0; i < n; ++i) {
      switch (classify(data + size_t(i) * elem, t.dtype)) {
        case Value::Nan: nan.add(i); break;
        case Value::Infinite: inf.add(i); break;
        case Value::Zero:
          if (scales) zero.add(i);
          break;
        case Value::Finite: break;
      }
    }
    const std::string what = cat("tensor '", t.name, "' (", dtype_name(t.dtype), " ", shape_str(t.shape), ")",
                                 scales ? cat(", the scales of '", scales_of[t.name], "'") : std::string());
    for (const auto& [counts, kind] : {std::pair{&nan, "NaN"}, {&inf, "infinite value"}})
      if (counts->count)
        check.problems.push_back(cat(what, ": ", counts->count, " ", kind, counts->count == 1 ? "" : "s",
                                     ", the first at index ", counts->first, " ", position(counts->first, t.shape)));
    if (zero.count)
      check.notes.push_back(cat(what, ": ", zero.count, " zero scale", zero.count == 1 ? "" : "s",
                                " (groups whose weights all read as 0), the first at index ", zero.first, " ",
                                position(zero.first, t.shape)));
  }
  return check;
}

}  // namespace hfstatic
