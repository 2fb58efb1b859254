#include "chat/budget.h"

#include "chat/value.h"
#include "util/error.h"

namespace hfstatic::chat {
namespace {

thread_local RenderBudget* active_budget = nullptr;

std::string mib(size_t bytes) { return cat(bytes >> 20, " MiB"); }

[[noreturn]] void string_too_long(size_t size) {
  render_error(cat("a string of ", size, " bytes exceeds the ", mib(kMaxStringBytes), " limit"));
}

}  // namespace

RenderBudget::RenderBudget(const Source& src) : src_(src), previous_(active_budget) { active_budget = this; }

RenderBudget::~RenderBudget() {
  active_budget = previous_;
  // Nothing of a render outlives it (its output is a string), so emptying every container it
  // changed in place frees whatever cycles they are part of.
  for (auto& [ptr, container] : mutated_) {
    if (container.is_array())
      Array().swap(container.arr());
    else if (container.is_object())
      Object().swap(container.obj());
  }
}

RenderBudget* RenderBudget::active() { return active_budget; }

void RenderBudget::build_string(size_t size) {
  if (size > kMaxStringBytes) string_too_long(size);
  bytes_ += size;
  if (bytes_ > kMaxRenderBytes) error(cat("exceeded the limit of ", mib(kMaxRenderBytes), " of strings built"));
}

void RenderBudget::mutated(const Value& container) {
  const void* key =
      container.is_array() ? static_cast<const void*>(&container.arr()) : static_cast<const void*>(&container.obj());
  mutated_.try_emplace(key, container);
}

void RenderBudget::error(const std::string& msg) const { src_.error(pos_, msg); }

void RenderBudget::too_many_steps() const { error(cat("exceeded the limit of ", kMaxRenderSteps, " steps")); }

void charge_steps(int64_t n) {
  if (active_budget) active_budget->step(n);
}

void charge_string(size_t size) {
  if (active_budget)
    active_budget->build_string(size);
  else if (size > kMaxStringBytes)
    string_too_long(size);
}

void record_mutation(const Value& container) {
  if (active_budget) active_budget->mutated(container);
}

void check_string_size(size_t size) {
  if (size > kMaxStringBytes) string_too_long(size);
}

void render_error(const std::string& msg) {
  if (active_budget) active_budget->error(msg);
  fail("chat template: ", msg);
}

void enter_value(int depth) {
  if (depth > kMaxValueDepth)
    render_error(cat("template value nests deeper than ", kMaxValueDepth, " levels (a list that contains itself?)"));
  charge_steps(1);
}

}  // namespace hfstatic::chat
