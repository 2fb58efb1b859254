// What the binding sources of the hfstatic Python module share: the argument and error helpers
// and one bind_* function per topic.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "contract/hf_static_contract.h"
#include "format/program.h"
#include "util/error.h"

namespace hfstatic::python {

namespace py = pybind11;

// Bad arguments to a call; raised in Python as hfstatic.UsageError.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs fn, a call on a loaded program or tokenizer: what such a call refuses (a prompt past the
// context, an id outside the vocabulary) is its arguments, so an Error from it is a UsageError.
template <typename Fn>
auto refusals_are_usage_errors(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const ContractError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// The program at `path`, or the default program linked into the module when there is none.
std::shared_ptr<const Program> load_program(const std::optional<std::filesystem::path>& path);
// A JSON value as the Python value json.loads would make.
py::object to_python(const nlohmann::json& value);

void bind_program(py::module_& m);    // program.cpp: Program, validate, export, make_checkpoint
void bind_tokenizer(py::module_& m);  // tokenizer.cpp: Tokenizer, chat templates
void bind_runner(py::module_& m);     // runner.cpp: Runner, Generation

}  // namespace hfstatic::python
