// Hand-built one-method programs for the executor tests (written with ProgramWriter).
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/method.h"
#include "format/program.h"
#include "test_support.h"
#include "util/error.h"

namespace hfstatic {
namespace {

using nlohmann::json;
using test::error_of;

// A one-method program ("m") under construction: values, nodes, outputs and its weights.
struct Graph {
  struct Weight {
    std::string name;
    DType dtype;
    Shape shape;
    std::vector<uint8_t> bytes;
  };
  MethodSpec m;
  std::vector<Weight> weights;

  Graph() { m.name.assign(1, 'm'); }
  Graph& in(const std::string& n, DType t, Shape s) {
    m.inputs.push_back({n, t, std::move(s)});
    return *this;
  }
  Graph& val(const std::string& n, DType t, Shape s) {
    m.values.push_back({n, t, std::move(s)});
    return *this;
  }
  Graph& node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
              json attrs = json::object()) {
    m.nodes.push_back({op, std::move(ins), std::move(outs), std::move(attrs)});
    return *this;
  }
  Graph& out(const std::string& n, const std::string& value, OutputMemory memory) {
    m.outputs.push_back({n, value, memory});
    return *this;
  }
  Graph& weight(const std::string& n, Shape s, std::vector<float> v = {}) {
    if (v.empty()) v.assign(size_t(*shape_numel(s)), 0.5f);
    std::vector<uint8_t> b(v.size() * 4);
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    weights.push_back({n, DType::F32, std::move(s), std::move(b)});
    return *this;
  }
  Graph& weight_i64(const std::string& n, Shape s) {
    weights.push_back({n, DType::I64, s, std::vector<uint8_t>(size_t(*shape_numel(s)) * 8)});
    return *this;
  }
};

class GraphTest : public testing::Test {
 protected:
  test::TempDir dir{"executor"};
  int count_ = 0;

  std::shared_ptr<const Program> write(const Graph& g) {
    ProgramSpec spec;
    spec.metadata = {{"purpose", "executor test"}};
    spec.methods.push_back(g.m);
    ProgramWriter w(spec);
    for (const auto& wt : g.weights) w.add_weight_bytes(wt.name, wt.dtype, wt.shape, wt.bytes);
    std::string path = dir.file(cat("g", count_++, ".hfs"));
    w.write(path);
    return Program::load(path);
  }
  std::string load_error(const Graph& g) {
    auto p = write(g);
    return error_of([&] { Method::load(p, "m"); });
  }
  std::shared_ptr<const Method> load(const Graph& g, const RuntimeOptions& options = {}) {
    return Method::load(write(g), "m", options);
  }
};

const Shape X = {1, 2, 4};  // the activation shape of most graphs below

inline std::vector<float> iota(size_t n, float start, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * float(i);
  return v;
}

}  // namespace
}  // namespace hfstatic
