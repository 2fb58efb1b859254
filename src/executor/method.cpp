#include "executor/method.h"

#include <algorithm>

namespace hfstatic {

std::shared_ptr<const Method> Method::load(std::shared_ptr<const Program> program, const std::string& name,
                                           const RuntimeOptions& options) {
  try {
    return load_checked(program, name, options);
  } catch (const Error& e) {
    fail(program->path(), ": ", e.what());
  } catch (const nlohmann::json::exception& e) {  // an attribute of the wrong JSON type
    fail(program->path(), ": method '", name, "': malformed node attributes: ", e.what());
  }
}

std::shared_ptr<const Method> Method::load_checked(std::shared_ptr<const Program> program, const std::string& name,
                                                   const RuntimeOptions& options) {
  const MethodSpec* spec = program->spec().find_method(name);
  if (!spec) fail("program has no method '", name, "'");
  auto m = std::shared_ptr<Method>(new Method());
  m->program_ = program;
  m->spec_ = spec;
  m->isa_ = kernels::best_isa(options.isa);
  m->kernels_ = kernels::kernel_table(m->isa_);
  m->idle_prefetch_ = options.idle_prefetch;

  Uses uses;
  m->add_values(uses);
  for (size_t ni = 0; ni < spec->nodes.size(); ++ni) m->add_node(ni, uses);
  m->check_all_produced(uses);
  m->add_outputs(uses);

  m->group_steps();
  const Readers readers = m->readers();
  if (options.fold_ops) m->fold_into_linear_steps(readers);
  m->mark_sliceable_steps(readers);
  m->find_token_axis();
  m->plan_kernels();
  m->plan_arena(uses);
  return m;
}

size_t Method::num_folded_steps() const {
  return size_t(std::count_if(steps_.begin(), steps_.end(), [](const Step& s) { return s.folded; }));
}

}  // namespace hfstatic
