// The work one render may do. A template is code from a model's files: without a bound, a few
// lines can loop for hours, build gigabytes of text, or nest a value (a list appended to itself)
// deeper than the stack. One RenderBudget per render counts steps (statements, expressions, loop
// iterations, elements built or visited) and the bytes of the strings built; exceeding a limit
// is an Error naming it and, when known, the template position.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "chat/lexer.h"
#include "chat/value.h"
#include "util/json_limits.h"

namespace hfstatic::chat {

inline constexpr int64_t kMaxRenderSteps = 10'000'000;
inline constexpr size_t kMaxStringBytes = size_t{64} << 20;   // one string
inline constexpr size_t kMaxRenderBytes = size_t{256} << 20;  // all strings built in one render
inline constexpr int kMaxValueDepth = kMaxJsonDepth;          // printing, comparing, serialising

class RenderBudget {
 public:
  // Becomes the budget of the render running on this thread until destroyed; then breaks the
  // reference cycles that in-place changes may have made (a list appended to itself).
  explicit RenderBudget(const Source& src);
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  // The budget of the render on this thread; nullptr outside a render.
  static RenderBudget* active();

  void at(size_t pos) { pos_ = pos; }  // the template position errors name
  void step(int64_t n = 1) {
    steps_ += n;
    if (steps_ > kMaxRenderSteps) too_many_steps();
  }
  // Before building a string of `size` bytes: checks it against the per-string limit and counts
  // it against the render's total.
  void build_string(size_t size);
  // A container (list or mapping) changed in place.
  void mutated(const Value& container);
  [[noreturn]] void error(const std::string& msg) const;

 private:
  [[noreturn]] void too_many_steps() const;

  const Source& src_;
  size_t pos_ = 0;
  int64_t steps_ = 0;
  size_t bytes_ = 0;
  std::unordered_map<const void*, Value> mutated_;
  RenderBudget* previous_ = nullptr;
};

// Error "chat template line L col C: msg" at the active render's position ("chat template: msg"
// outside a render).
[[noreturn]] void render_error(const std::string& msg);

// The active budget's checks; no-ops outside a render.
void charge_steps(int64_t n);
void charge_string(size_t size);
// Reading `bytes` of text (searching, comparing, copying): a step per 64 bytes.
inline void charge_scan(size_t bytes) { charge_steps(static_cast<int64_t>(bytes >> 6)); }
// Checks a string that is growing piece by piece (its final size is charged once built).
void check_string_size(size_t size);
// A list or mapping changed in place (see ~RenderBudget).
void record_mutation(const Value& container);
// Nesting depth of the value being printed, compared or serialised; counts a step.
void enter_value(int depth);

}  // namespace hfstatic::chat
