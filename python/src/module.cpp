// The hfstatic._hfstatic extension: the exception classes and the module itself.
#include "bindings.h"
#include "frontend/default_program.h"

namespace hfstatic::python {

std::shared_ptr<const Program> load_program(const std::optional<std::filesystem::path>& path) {
  if (path) return Program::load(path->string());
  return frontend::default_program();
}

py::object to_python(const nlohmann::json& value) { return py::module_::import("json").attr("loads")(value.dump()); }

namespace {

void bind_errors(py::module_& m) {
  static py::exception<Error> error(m, "Error", PyExc_Exception);
  static py::exception<ContractError> contract_error(m, "ContractError", error.ptr());
  static py::exception<Error> format_error(m, "FormatError", error.ptr());
  static py::exception<UsageError> usage_error(m, "UsageError", error.ptr());
  error.doc() = "Base class of every error hfstatic raises; str(e) is the C++ message.";
  contract_error.doc() = "A program that breaks its I/O contract (hf_static v1); the message lists every violation.";
  format_error.doc() = "A file that cannot be read or is not a valid program, checkpoint or tokenizer.";
  usage_error.doc() = "Bad arguments: a value out of range, a prompt past the context, an id outside the vocabulary.";
  for (py::handle cls : std::initializer_list<py::handle>{error, contract_error, format_error, usage_error})
    cls.attr("__module__") = "hfstatic";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ContractError& e) {
      contract_error(e.what());
    } catch (const UsageError& e) {
      usage_error(e.what());
    } catch (const Error& e) {
      format_error(e.what());
    }
  });
}

}  // namespace
}  // namespace hfstatic::python

PYBIND11_MODULE(_hfstatic, m) {
  using namespace hfstatic::python;
  m.doc() = "The compiled core of the hfstatic package (import hfstatic instead).";
  bind_errors(m);
  bind_program(m);
  bind_tokenizer(m);
  bind_runner(m);
}
