// Programs: loading and inspecting them, validating them, exporting checkpoints to them.
#include <cstdint>
#include <vector>

#include "bindings.h"
#include "export/exporter.h"
#include "export/make_checkpoint.h"
#include "format/weight_check.h"
#include "frontend/program_check.h"
#include "io/io_manager.h"

namespace hfstatic::python {
namespace {

struct PyProgram {
  std::shared_ptr<const Program> program;
};

DType dtype_arg(const std::string& arg, const std::string& value, std::initializer_list<DType> allowed) {
  auto t = dtype_from_name(value);
  std::string names;
  for (DType a : allowed) {
    if (t == a) return a;
    names += (names.empty() ? "" : "|") + std::string(dtype_name(a));
  }
  throw UsageError(arg + ": '" + value + "' is not one of " + names);
}

int64_t int_arg(const std::string& arg, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) throw UsageError(cat(arg, ": ", value, " is outside [", lo, ", ", hi, "]"));
  return value;
}

py::dict value_signature(const std::string& name, const ValueSpec* value) {
  py::dict d;
  d["name"] = name;
  d["dtype"] = value ? py::object(py::str(dtype_name(value->dtype))) : py::none();
  d["shape"] = value ? py::object(py::tuple(py::cast(value->shape))) : py::none();
  return d;
}

py::list method_signatures(const Program& program) {
  py::list methods;
  for (const MethodSpec& method : program.spec().methods) {
    py::list inputs, outputs;
    for (const ValueSpec& v : method.inputs) inputs.append(value_signature(v.name, &v));
    for (size_t i = 0; i < method.outputs.size(); ++i) {
      py::dict d = value_signature(method.outputs[i].name, method.output_value(i));
      d["memory"] = output_memory_name(method.outputs[i].memory);
      outputs.append(d);
    }
    py::dict d;
    d["name"] = method.name;
    d["inputs"] = inputs;
    d["outputs"] = outputs;
    d["nodes"] = method.nodes.size();
    methods.append(d);
  }
  return methods;
}

ExportSummary export_checkpoint(const std::filesystem::path& hf_dir, const std::filesystem::path& out,
                                std::optional<int64_t> prefill_len, int64_t max_context,
                                std::optional<std::string> weights_dtype, std::optional<int64_t> group_size,
                                const std::string& cache_dtype, bool repeat_state, const std::string& mutation_order,
                                std::optional<py::function> progress) {
  ExportOptions options;
  options.graph.max_context = int_arg("max_context", max_context, 2, int64_t(1) << 24);
  options.graph.prefill_len =
      int_arg("prefill_len", prefill_len.value_or(std::min<int64_t>(32, max_context)), 1, int64_t(1) << 24);
  options.graph.cache_dtype = dtype_arg("cache_dtype", cache_dtype, {DType::F32, DType::F16});
  options.graph.repeat_state = repeat_state;
  options.graph.mutation_order = mutation_order;
  if (weights_dtype) {
    const DType t =
        dtype_arg("weights_dtype", *weights_dtype, {DType::F32, DType::F16, DType::BF16, DType::I8, DType::I4});
    if (t == DType::I8 || t == DType::I4)
      options.quant = WeightQuant{t, 32};
    else
      options.weights_dtype = t;
  }
  if (group_size) {
    if (!options.quant) throw UsageError("group_size: only with weights_dtype int8 or int4");
    if (*group_size != 32 && *group_size != 64 && *group_size != 128)
      throw UsageError(cat("group_size: ", *group_size, " is not one of 32|64|128"));
    options.quant->group = *group_size;
  }
  if (progress) {
    options.progress = [&progress](uint64_t done, uint64_t total) {
      py::gil_scoped_acquire gil;
      (*progress)(done, total);
    };
  }
  py::gil_scoped_release release;
  return export_program(hf_dir.string(), out.string(), options);
}

void make_checkpoint_folder(const std::filesystem::path& out, const std::string& preset, int64_t seed,
                            std::optional<std::string> dtype, int64_t shard_mib) {
  MakeCheckpointOptions options;
  options.preset = preset;
  options.seed = uint64_t(int_arg("seed", seed, 0, INT64_MAX));
  if (dtype) options.dtype = dtype_arg("dtype", *dtype, {DType::F32, DType::F16, DType::BF16});
  options.shard_bytes = uint64_t(int_arg("shard_mib", shard_mib, 0, 1 << 20)) << 20;
  try {
    find_checkpoint_preset(preset);  // an unknown preset: an error before touching the folder
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  py::gil_scoped_release release;
  make_checkpoint(out.string(), options);
}

}  // namespace

void bind_program(py::module_& m) {
  py::class_<PyProgram>(m, "Program",
                        "A program file, mapped and checked for structure (not yet against its contract).")
      .def(py::init([](std::optional<std::filesystem::path> path) {
             py::gil_scoped_release release;
             return PyProgram{load_program(path)};
           }),
           py::arg("path") = py::none(),
           "Loads the program at `path` (None: the default program linked into the module). Raises FormatError.")
      .def_property_readonly(
          "path", [](const PyProgram& p) { return p.program->path(); }, "The file's path.")
      .def_property_readonly(
          "file_size", [](const PyProgram& p) { return p.program->file_size(); }, "Bytes of the file.")
      .def_property_readonly(
          "weight_bytes", [](const PyProgram& p) { return p.program->weight_bytes(); }, "Bytes of its weight tensors.")
      .def_property_readonly(
          "metadata", [](const PyProgram& p) { return to_python(p.program->metadata()); },
          "The model and contract metadata, as a dict.")
      .def_property_readonly(
          "methods", [](const PyProgram& p) { return method_signatures(*p.program); },
          "Each method's name, inputs and outputs (name, dtype, shape; outputs also memory) and\n"
          "node count.")
      .def(
          "embedded_file",
          [](const PyProgram& p, const std::string& name) { return py::bytes(p.program->embedded_file(name)); },
          py::arg("name"), "Bytes of a file embedded in the program, such as 'tokenizer.json' (empty when absent).")
      .def(
          "validate",
          [](const PyProgram& p) {
            py::gil_scoped_release release;
            return frontend::program_problems(p.program);
          },
          "Every contract violation and graph problem of the program; empty when it is valid.")
      .def(
          "describe", [](const PyProgram& p) { return IOManagerRegistry::instance().describe(*p.program); },
          "A one-line summary of a valid program ('hf_static v1 program (...)').")
      .def("__repr__", [](const PyProgram& p) { return "<hfstatic.Program " + p.program->path() + ">"; });

  m.def(
      "validate",
      [](const std::filesystem::path& path, bool check_weights) {
        py::gil_scoped_release release;
        auto program = Program::load(path.string());
        std::vector<std::string> problems = frontend::program_problems(program);
        if (check_weights) {
          const WeightCheck weights = hfstatic::check_weights(*program);
          problems.insert(problems.end(), weights.problems.begin(), weights.problems.end());
        }
        return problems;
      },
      py::arg("path"), py::kw_only(), py::arg("check_weights") = false,
      "Checks the program at `path` against its I/O contract and its methods' graphs, as `hfstatic validate` does;\n"
      "with check_weights=True also scans its weights for NaN and infinity (`--check-weights`). Returns every\n"
      "problem (an empty list when the program is valid); raises FormatError for a file that is not a program at\n"
      "all.");

  m.def("export", &export_checkpoint, py::arg("hf_dir"), py::arg("out"), py::kw_only(),
        py::arg("prefill_len") = py::none(), py::arg("max_context") = 512, py::arg("weights_dtype") = py::none(),
        py::arg("group_size") = py::none(), py::arg("cache_dtype") = "float32", py::arg("repeat_state") = false,
        py::arg("mutation_order") = "input", py::arg("progress") = py::none(),
        "Exports the Hugging Face checkpoint folder `hf_dir` to the program file `out` (written atomically), as\n"
        "`hfstatic export` does. prefill_len defaults to min(32, max_context); weights_dtype (float32, float16,\n"
        "bfloat16, int8, int4) defaults to the checkpoint's; group_size (32, 64, 128; default 32) is the int8/int4\n"
        "scale group; cache_dtype is float32 or float16. progress(done, total), when\n"
        "given, is called as bytes are written. Returns an ExportSummary.");
  py::class_<ExportSummary>(m, "ExportSummary", "What export() wrote.")
      .def_readonly("file_bytes", &ExportSummary::file_bytes, "Bytes of the program file.")
      .def_readonly("weight_bytes", &ExportSummary::weight_bytes, "Bytes of its weights.")
      .def_readonly("tensors", &ExportSummary::tensors, "Number of tensors.")
      .def_readonly("skipped_tensors", &ExportSummary::skipped_tensors,
                    "Tensors of a multimodal checkpoint's other towers, not exported.")
      .def_readonly("skipped", &ExportSummary::skipped_what, "What those are ('' when none).")
      .def("__repr__", [](const ExportSummary& s) {
        return cat("ExportSummary(file_bytes=", s.file_bytes, ", weight_bytes=", s.weight_bytes,
                   ", tensors=", s.tensors, ", skipped_tensors=", s.skipped_tensors, ")");
      });

  m.def("make_checkpoint", &make_checkpoint_folder, py::arg("out"), py::kw_only(), py::arg("preset") = "tiny",
        py::arg("seed") = 0, py::arg("dtype") = py::none(), py::arg("shard_mib") = 0,
        "Writes a random-initialised Hugging Face checkpoint of a preset into the folder `out`, as\n"
        "`hfstatic make-checkpoint` does (checkpoint_presets() lists the presets).");
  m.def(
      "checkpoint_presets",
      [] {
        py::dict presets;
        for (const auto& p : checkpoint_presets()) presets[py::str(p.name)] = p.description;
        return presets;
      },
      "The presets make_checkpoint() knows: {name: description}.");
}

}  // namespace hfstatic::python
