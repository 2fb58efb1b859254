#include "kernels/kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/isa.h"
#include "kernels/parallel.h"
#include "kernels/quant.h"
#include "kernels/simd_common.h"

#ifdef HFSTATIC_X86_SIMD
#include <cpuid.h>
#endif

namespace hfstatic::kernels {

// ---- portable scalar kernels: the fallback and the reference of the SIMD tests ---------------
namespace scalar {

void load_row(const void* src, DType type, int64_t n, float* dst) {
  switch (type) {
    case DType::F32: std::memcpy(dst, src, size_t(n) * sizeof(float)); break;
    case DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      break;
    }
    case DType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      break;
    }
    default: break;
  }
}

void store_row(const float* src, int64_t n, void* dst, DType type) {
  if (type == DType::F32) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
  } else {
    uint16_t* d = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
  }
}

static inline float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int k = 0; k < 8; ++k) s += acc[k];
  return s;
}

void load_quant_row(const void* w, DType w_type, const uint16_t* scales, int64_t group, int64_t row, int64_t n,
                    float* dst) {
  quant::dequantize_row(w, w_type, scales, group, row, n, dst);
}

// Quantized weights are dequantized a row at a time, then multiplied in float32.
void linear(const float* x, int64_t rows, int64_t in, const LinearOutput& t) {
  const void* w = t.w;
  const DType w_type = t.w_type;
  const int64_t out = t.out;
  float* y = t.y;
  const size_t w_row_bytes = size_t(dtype_bytes(w_type, in));
  parallel_for(out, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> w_row(static_cast<size_t>(in));
    float b = 0;
    for (int64_t o = begin; o < end; ++o) {
      const float* wr;
      if (w_type == DType::F32) {
        wr = reinterpret_cast<const float*>(static_cast<const uint8_t*>(w) + size_t(o) * w_row_bytes);
      } else if (quant::is_quantized(w_type)) {
        quant::dequantize_row(w, w_type, t.quant.scales, t.quant.group, o, in, w_row.data());
        wr = w_row.data();
      } else {
        load_row(static_cast<const uint8_t*>(w) + size_t(o) * w_row_bytes, w_type, in, w_row.data());
        wr = w_row.data();
      }
      if (t.bias)
        load_row(static_cast<const uint8_t*>(t.bias) + size_t(o) * dtype_size(t.bias_type), t.bias_type, 1, &b);
      for (int64_t r = 0; r < rows; ++r) y[r * out + o] = dot(x + r * in, wr, in) + b;
    }
  });
}

void rms_norm(const float* x, int64_t rows, int64_t n, const void* w, DType w_type, float eps, float* y) {
  std::vector<float> weight(static_cast<size_t>(n));
  load_row(w, w_type, n, weight.data());
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += double(xr[i]) * xr[i];
    float inv = float(1.0 / std::sqrt(ss / double(n) + double(eps)));
    for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * inv * weight[i];
  }
}

void rope(const float* x, float* y, int64_t rows, int64_t heads, int64_t head_dim, int64_t rotary_dim,
          const int64_t* positions, const float* inv_freq, float attention_factor) {
  const int64_t half = rotary_dim / 2;
  std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      // Angles in double: positions up to the context length times the highest frequency.
      double angle = double(positions[r]) * double(inv_freq[i]);
      cos_t[i] = float(std::cos(angle) * attention_factor);
      sin_t[i] = float(std::sin(angle) * attention_factor);
    }
    for (int64_t h = 0; h < heads; ++h) {
      const float* v = x + (r * heads + h) * head_dim;
      float* o = y + (r * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        float a = v[i], b = v[i + half];
        o[i] = a * cos_t[i] - b * sin_t[i];
        o[i + half] = b * cos_t[i] + a * sin_t[i];
      }
      for (int64_t i = rotary_dim; i < head_dim; ++i) o[i] = v[i];
    }
  }
}

void attention(const float* q, int64_t rows, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, const void* k_cache,
               const void* v_cache, DType cache_type, int64_t max_context, const float* mask, float scale,
               float softcap, float* out) {
  const int64_t group = n_heads / n_kv_heads;
  const size_t elem = dtype_size(cache_type);
  const uint8_t* kc = static_cast<const uint8_t*>(k_cache);
  const uint8_t* vc = static_cast<const uint8_t*>(v_cache);
  parallel_for(rows * n_heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(max_context)), row(static_cast<size_t>(head_dim)),
        acc(static_cast<size_t>(head_dim));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t r = task / n_heads, h = task % n_heads, g = h / group;
      const float* qr = q + (r * n_heads + h) * head_dim;
      const float* m = mask + r * max_context;
      float* o = out + (r * n_heads + h) * head_dim;
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < max_context; ++j) {
        if (m[j] == -std::numeric_limits<float>::infinity()) {
          scores[j] = m[j];
          continue;
        }
        const uint8_t* kr = kc + size_t((g * max_context + j) * head_dim) * elem;
        load_row(kr, cache_type, head_dim, row.data());
        if (softcap > 0) {
          scores[j] = softcap * std::tanh(dot(qr, row.data(), head_dim) * scale / softcap) + m[j];
        } else {
          scores[j] = dot(qr, row.data(), head_dim) * scale + m[j];
        }
        if (scores[j] > best) best = scores[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      if (!(best > -std::numeric_limits<float>::infinity())) {  // fully masked (or NaN): zeros
        std::memcpy(o, acc.data(), size_t(head_dim) * sizeof(float));
        continue;
      }
      double denom = 0;
      for (int64_t j = 0; j < max_context; ++j) {
        if (scores[j] == -std::numeric_limits<float>::infinity()) continue;
        float p = std::exp(scores[j] - best);
        denom += p;
        const uint8_t* vr = vc + size_t((g * max_context + j) * head_dim) * elem;
        load_row(vr, cache_type, head_dim, row.data());
        for (int64_t d = 0; d < head_dim; ++d) acc[d] += p * row[d];
      }
      const float inv = float(1.0 / denom);
      for (int64_t d = 0; d < head_dim; ++d) o[d] = acc[d] * inv;
    }
  });
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
  constexpr float kTwoSqrt2OverPi = 1.5957691216057308f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-kTwoSqrt2OverPi * (g + 0.044715f * g * g * g))) * up[i];
  }
}

void linear_group(const float* x, int64_t rows, int64_t in, const LinearOutput* outputs, int count,
                  const LinearFusion* fusion) {
  std::vector<float> input;
  if (fusion && (fusion->norm_w || fusion->up)) {
    input.resize(size_t(rows * in));
    if (fusion->norm_w)
      rms_norm(x, rows, in, fusion->norm_w, fusion->norm_type, fusion->norm_eps, input.data());
    else if (fusion->gelu_tanh)
      gelu_tanh_mul(x, fusion->up, rows * in, input.data());
    else
      silu_mul(x, fusion->up, rows * in, input.data());
    x = input.data();
  }
  for (int i = 0; i < count; ++i) {
    const LinearOutput& o = outputs[i];
    if (o.x_rows > 0)
      linear(x + o.x_row * in, o.x_rows, in, o);
    else
      linear(x, rows, in, o);
  }
}

// The scalar kernels split a group differently from the SIMD ones: nothing to plan.
std::vector<PrefetchRange> linear_group_first_reads(int64_t, int64_t, const LinearOutput*, int, int, size_t) {
  return {};
}

// The scalar kernels keep their buffers in local vectors.
KernelPlan plan_linear(bool, int64_t, int64_t, const LinearOutput* outputs, int count, FoldedOp) {
  bool quantized = false;
  for (int i = 0; i < count; ++i) quantized |= quant::is_quantized(outputs[i].w_type);
  return {quantized ? "scalar dequantize-dot" : "scalar dot", {}};
}

KernelPlan plan_attention(bool, int64_t, int64_t, int64_t, int64_t, DType, int64_t) {
  return {"scalar one head at a time", {}};
}

KernelPlan plan_rms_norm(int64_t) { return {"scalar", {}}; }

// One implementation whatever the rows: each variant is the same function.
const KernelTable table = {.load_row = load_row,
                           .store_row = store_row,
                           .load_quant_row = load_quant_row,
                           .linear_group = linear_group,
                           .linear_few_rows = linear_group,
                           .linear_many_rows = linear_group,
                           .linear_group_first_reads = linear_group_first_reads,
                           .rms_norm = rms_norm,
                           .rope = rope,
                           .attention = attention,
                           .attention_few_rows = attention,
                           .attention_many_rows = attention,
                           .plan_linear = plan_linear,
                           .plan_attention = plan_attention,
                           .plan_rms_norm = plan_rms_norm,
                           .silu_mul = silu_mul,
                           .add = add,
                           .gelu_tanh_mul = gelu_tanh_mul};

}  // namespace scalar

#ifdef HFSTATIC_X86_SIMD  // set by CMakeLists.txt when simd_*.cpp are built
namespace avx2 {
extern const KernelTable table, vnni_table;
}
namespace avx512 {
extern const KernelTable table, vnni_table, vnni512_table;
}
#endif

// ---- selection -------------------------------------------------------------------------------

namespace {

#ifdef HFSTATIC_X86_SIMD
// The CPU features the levels need, by the names __builtin_cpu_supports takes (literals only).
struct CpuFeature {
  const char* name;
  bool (*present)();
};
#define HFSTATIC_CPU_FEATURE(f)                         \
  {                                                     \
#f, [] { return bool(__builtin_cpu_supports(#f)); } \
  }
constexpr CpuFeature kCpuFeatures[] = {
    HFSTATIC_CPU_FEATURE(avx2),     HFSTATIC_CPU_FEATURE(fma),      HFSTATIC_CPU_FEATURE(f16c),
    HFSTATIC_CPU_FEATURE(avxvnni),  HFSTATIC_CPU_FEATURE(avx512f),  HFSTATIC_CPU_FEATURE(avx512bw),
    HFSTATIC_CPU_FEATURE(avx512dq), HFSTATIC_CPU_FEATURE(avx512vl), HFSTATIC_CPU_FEATURE(avx512vnni)};
#undef HFSTATIC_CPU_FEATURE

bool cpu_feature(std::string_view name) {
  __builtin_cpu_init();
  for (const CpuFeature& f : kCpuFeatures)
    if (name == f.name) return f.present();
  return false;
}

// The CPU's family if it is AMD's, else 0.
unsigned amd_family() {
  static const unsigned family = [] {
    __builtin_cpu_init();
    if (!__builtin_cpu_is("amd")) return 0u;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    __get_cpuid(1, &eax, &ebx, &ecx, &edx);
    const unsigned base = (eax >> 8) & 0xf;
    return base == 0xf ? base + ((eax >> 20) & 0xff) : base;
  }();
  return family;
}

// The features each level adds to the one below it (Avx2Vnni and Avx512 both add to Avx2).
constexpr const char* kAvx2Features[] = {"avx2", "fma", "f16c"};
constexpr const char* kAvx512Features[] = {"avx512f", "avx512bw", "avx512dq", "avx512vl"};

template <size_t N>
bool cpu_has_all(const char* const (&features)[N]) {
  for (const char* f : features)
    if (!cpu_feature(f)) return false;
  return true;
}
#endif

bool cpu_has(Isa isa) {
#ifdef HFSTATIC_X86_SIMD
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2: return cpu_has_all(kAvx2Features);
    case Isa::Avx2Vnni: return cpu_has(Isa::Avx2) && cpu_feature("avxvnni");
    case Isa::Avx512: return cpu_has(Isa::Avx2) && cpu_has_all(kAvx512Features);
    case Isa::Avx512Vnni: return cpu_has(Isa::Avx512) && cpu_feature("avx512vnni");
    case Isa::Avx512Vnni512: return cpu_has(Isa::Avx512Vnni);
  }
  return false;
#else
  return isa == Isa::Scalar;
#endif
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx2Vnni: return "avx2-vnni";
    case Isa::Avx512: return "avx512";
    case Isa::Avx512Vnni: return "avx512-vnni";
    case Isa::Avx512Vnni512: return "avx512-vnni-512";
  }
  return "?";
}

const char* isa_cpu_features() {
  static const std::string features = [] {
    std::string out;
#ifdef HFSTATIC_X86_SIMD
    __builtin_cpu_init();
    for (const CpuFeature& f : kCpuFeatures)
      if (f.present()) out += out.empty() ? std::string(f.name) : std::string(" ") + f.name;
#endif
    return out;
  }();
  return features.c_str();
}

bool isa_supported(Isa isa) {
  static const bool supported[] = {cpu_has(Isa::Scalar), cpu_has(Isa::Avx2),       cpu_has(Isa::Avx2Vnni),
                                   cpu_has(Isa::Avx512), cpu_has(Isa::Avx512Vnni), cpu_has(Isa::Avx512Vnni512)};
  static_assert(std::size(supported) == std::size(kIsas));
  return supported[int(isa)];
}

bool isa_splits_512_bit_vectors() {
#ifdef HFSTATIC_X86_SIMD
  static const bool zen4 = amd_family() == 25 && cpu_feature("avx512f");
  return zen4;
#else
  return false;
#endif
}

Isa best_isa(std::optional<Isa> cap) {
  Isa isa = cap.value_or(isa_splits_512_bit_vectors() ? Isa::Avx512Vnni : Isa::Avx512Vnni512);
  while (!isa_supported(isa)) isa = Isa(int(isa) - 1);
  return isa;
}

const KernelTable* kernel_table(Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::Scalar: return &scalar::table;
#ifdef HFSTATIC_X86_SIMD
    case Isa::Avx2: return &avx2::table;
    case Isa::Avx2Vnni: return &avx2::vnni_table;
    case Isa::Avx512: return &avx512::table;
    case Isa::Avx512Vnni: return &avx512::vnni_table;
    case Isa::Avx512Vnni512: return &avx512::vnni512_table;
#else
    default: return nullptr;
#endif
  }
  return nullptr;
}

KernelTable KernelTable::for_rows(int64_t rows) const {
  KernelTable t = *this;
  t.linear_group = rows >= kManyRows ? linear_many_rows : linear_few_rows;
  t.attention = rows >= kManyRows ? attention_many_rows : attention_few_rows;
  return t;
}

// ---- helpers of the SIMD translation units ---------------------------------------------------

namespace detail {

std::vector<PrefetchRange> matvec_first_reads(int64_t rows, int64_t in, const LinearOutput* outputs, int count,
                                              int threads, size_t bytes) {
  std::vector<PrefetchRange> first;
  if (rows >= kMatvecMaxRows || threads <= 1) return first;
  const int64_t total = total_items(outputs, count, matvec_features);
  for (int slot = 0; slot < threads; ++slot) {
    const auto [begin, end] = owned_items(total, kMatvecGrain, threads, slot);
    PrefetchRange range;
    for_each_part(outputs, count, matvec_features, begin, end, [&](int i, int64_t lo, int64_t hi) {
      if (range.data) return;  // the product holding the stretch's first row
      const size_t row_bytes = size_t(dtype_bytes(outputs[i].w_type, in));
      range = {static_cast<const char*>(outputs[i].w) + size_t(lo) * row_bytes,
               std::min(bytes, size_t(hi - lo) * row_bytes)};
    });
    first.push_back(range);
  }
  return first;
}

int64_t float_prefetch_ahead() {
#ifdef HFSTATIC_X86_SIMD
  const unsigned family = amd_family();
  if (family == 0) return kPrefetchAhead;
  return family >= 26 ? int64_t(8192) : int64_t(1024);
#else
  return kPrefetchAhead;
#endif
}

int64_t quant_prefetch_ahead(DType w_type, int64_t rows) {
  if (isa_splits_512_bit_vectors())  // Zen 4
    return w_type == DType::I8 && rows == 1 ? 0 : 16384;
  return kPrefetchAhead;
}

const float* RopeTable::cos(const int64_t* positions, int64_t rows, const float* inv_freq, int64_t half, float factor) {
  const bool same = rows == rows_ && half == half_ && factor == factor_ &&
                    std::memcmp(pos_.get(), positions, size_t(rows) * 8) == 0 &&
                    std::memcmp(inv_.get(), inv_freq, size_t(half) * 4) == 0;
  if (same) return cos_.get();
  if (rows * half > capacity_ || !pos_ || rows > rows_capacity_ || half > half_capacity_) {
    capacity_ = std::max(rows * half, capacity_);
    rows_capacity_ = std::max(rows, rows_capacity_);
    half_capacity_ = std::max(half, half_capacity_);
    cos_.reset(new float[size_t(capacity_)]);
    sin_.reset(new float[size_t(capacity_)]);
    pos_.reset(new int64_t[size_t(rows_capacity_)]);
    inv_.reset(new float[size_t(half_capacity_)]);
  }
  rows_ = rows;
  half_ = half;
  factor_ = factor;
  std::memcpy(pos_.get(), positions, size_t(rows) * 8);
  std::memcpy(inv_.get(), inv_freq, size_t(half) * 4);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < half; ++i) {
      // Angles in double: positions up to the context length times the highest frequency.
      double angle = double(positions[r]) * double(inv_freq[i]);
      cos_[r * half + i] = float(std::cos(angle) * factor);
      sin_[r * half + i] = float(std::sin(angle) * factor);
    }
  return cos_.get();
}

RopeTable& rope_table() {
  thread_local RopeTable table;
  return table;
}

}  // namespace detail

}  // namespace hfstatic::kernels
