// Program file loading: every kind of corrupt container or spec is rejected with an error that
// names the file, the tensor or field at fault and the problem; well-formed files round-trip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "format/program.h"
#include "test_support.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace hfstatic {
namespace {

using nlohmann::json;
using testing::AllOf;
using testing::HasSubstr;

// ---- helpers -------------------------------------------------------------------------------

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

// 8-byte little-endian header length (the real length unless `claimed` is given), the header
// text, then the data bytes.
std::vector<uint8_t> container(const std::string& header, const std::vector<uint8_t>& data = {},
                               std::optional<uint64_t> claimed = std::nullopt) {
  std::vector<uint8_t> out;
  put_u64(out, claimed.value_or(header.size()));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// Pads a header with spaces so the data area starts at a multiple of 8 (as programs need).
std::string padded(std::string header) {
  while ((8 + header.size()) % 8 != 0) header.push_back(' ');
  return header;
}

using test::error_of;

std::string parse_error(const std::vector<uint8_t>& bytes, const SafetensorsOptions& options = {}) {
  return error_of([&] { SafetensorsView::parse(bytes.data(), bytes.size(), "blob.safetensors", options); });
}

class FormatErrors : public testing::Test {
 protected:
  test::TempDir dir{"format"};

  // Writes bytes to a file and returns the error Program::load reports for it.
  std::string load_error(const std::vector<uint8_t>& bytes, const std::string& name = "bad.hfs") {
    std::string path = dir.file(name);
    write_bytes(path, bytes);
    return error_of([&] { Program::load(path); });
  }

  // A tiny program exported with the library, shared by the tests of one binary.
  static const std::string& real_program() {
    static test::TempDir keep("format-real");
    static std::string path = [] {
      GraphOptions g;
      g.prefill_len = 4;
      g.max_context = 16;
      return test::export_to(test::cached_checkpoint("tiny", 3), keep.file("tiny.hfs"), g);
    }();
    return path;
  }

  struct Parts {
    json header;
    std::vector<uint8_t> data;
  };
  static Parts split(const std::vector<uint8_t>& file) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | file[size_t(i)];
    Parts p;
    p.header = json::parse(file.begin() + 8, file.begin() + 8 + std::ptrdiff_t(n));
    p.data.assign(file.begin() + 8 + std::ptrdiff_t(n), file.end());
    return p;
  }
  // The real program with its header replaced by `header` (padded so alignment still holds).
  static std::vector<uint8_t> rebuilt(const json& header, const std::vector<uint8_t>& data) {
    std::string text = header.dump();
    while ((8 + text.size()) % 64 != 0) text.push_back(' ');
    return container(text, data);
  }
  // The real program with its spec JSON passed through `edit`.
  std::string spec_error(const std::function<void(json&)>& edit) {
    Parts p = split(read_bytes(real_program()));
    json spec = json::parse(p.header["__metadata__"][kProgramMetadataKey].get<std::string>());
    edit(spec);
    p.header["__metadata__"][kProgramMetadataKey] = spec.dump();
    return load_error(rebuilt(p.header, p.data), "spec.hfs");
  }
};

// ---- container: sizes and header -----------------------------------------------------------

TEST_F(FormatErrors, FileShorterThanEightBytes) {
  std::string e = load_error({1, 2, 3, 4, 5});
  EXPECT_THAT(e, AllOf(HasSubstr("bad.hfs"), HasSubstr("file is 5 bytes, too short for the 8-byte header length")));
  EXPECT_THAT(load_error({}, "empty.hfs"), AllOf(HasSubstr("empty.hfs"), HasSubstr("file is 0 bytes")));
}

TEST_F(FormatErrors, MissingFileNamesThePath) {
  std::string e = error_of([&] { Program::load(dir.file("absent.hfs")); });
  EXPECT_THAT(e, AllOf(HasSubstr("absent.hfs"), HasSubstr("cannot open")));
}

TEST_F(FormatErrors, TruncatedHeader) {
  // A real program cut in the middle of its header.
  std::vector<uint8_t> file = read_bytes(real_program());
  uint64_t n = split(file).header.dump().size();
  file.resize(8 + n / 2);
  std::string e = load_error(file);
  EXPECT_THAT(e, AllOf(HasSubstr("bad.hfs"), HasSubstr("runs past the end of the file"),
                       HasSubstr(cat("(", n / 2, " bytes follow the length)"))));
}

TEST_F(FormatErrors, HeaderLengthPastEndOfFile) {
  EXPECT_THAT(load_error(container("{}", {}, 100)),
              HasSubstr("header length 100 runs past the end of the file (2 bytes follow the length)"));
  // A length near 2^64 must not wrap around.
  EXPECT_THAT(load_error(container("{}", {}, ~uint64_t(0))),
              HasSubstr("header length 18446744073709551615 runs past the end of the file"));
}

TEST_F(FormatErrors, HeaderLengthOverTheLimit) {
  SafetensorsOptions o;
  o.max_header_size = 16;
  std::string header = R"({"__metadata__":{"a":"bbbbbbbbbbbbbbbb"}})";
  EXPECT_THAT(parse_error(container(header), o),
              AllOf(HasSubstr("blob.safetensors"),
                    HasSubstr(cat("header length ", header.size(), " exceeds the limit of 16 bytes"))));
  // The same header is fine under the default limit.
  auto bytes = container(header);
  EXPECT_NO_THROW(SafetensorsView::parse(bytes.data(), bytes.size(), "ok"));
}

TEST_F(FormatErrors, HeaderTooSmallForAnObject) {
  EXPECT_THAT(load_error(container("")), HasSubstr("header length 0 is too small for a JSON object"));
  EXPECT_THAT(load_error(container("{")), HasSubstr("header length 1 is too small for a JSON object"));
}

TEST_F(FormatErrors, HeaderNotJson) {
  EXPECT_THAT(load_error(container(padded("{\"a\": [1, 2"))),
              AllOf(HasSubstr("bad.hfs"), HasSubstr("header is not valid JSON")));
  // Bytes beyond the declared header length are data, not header: a header cut short is invalid.
  EXPECT_THAT(load_error(container("{\"__metadata__\":{}}", {}, 8)), HasSubstr("header is not valid JSON"));
}

TEST_F(FormatErrors, HeaderJsonNotAnObject) {
  EXPECT_THAT(load_error(container(padded("[1, 2, 3]"))), HasSubstr("header is not a JSON object"));
  EXPECT_THAT(load_error(container(padded("\"text\""))), HasSubstr("header is not a JSON object"));
}

TEST_F(FormatErrors, MetadataNotAnObjectOrNotStrings) {
  EXPECT_THAT(load_error(container(padded(R"({"__metadata__": [1]})"))), HasSubstr("__metadata__ is not an object"));
  EXPECT_THAT(load_error(container(padded(R"({"__metadata__": {"k": 3}})"))),
              HasSubstr("__metadata__.k is not a string"));
}

// ---- container: tensor entries -------------------------------------------------------------

TEST_F(FormatErrors, TensorEntryMissingAField) {
  std::vector<uint8_t> data(16);
  EXPECT_THAT(load_error(container(padded(R"({"w": {"shape": [4], "data_offsets": [0, 16]}})"), data)),
              AllOf(HasSubstr("tensor 'w' has no dtype")));
  EXPECT_THAT(load_error(container(padded(R"({"w": {"dtype": "F32", "data_offsets": [0, 16]}})"), data)),
              HasSubstr("tensor 'w' has no shape"));
  EXPECT_THAT(load_error(container(padded(R"({"w": {"dtype": "F32", "shape": [4]}})"), data)),
              HasSubstr("tensor 'w' has no data_offsets"));
  EXPECT_THAT(load_error(container(padded(R"({"w": [1, 2]})"), data)), HasSubstr("tensor 'w' entry is not an object"));
}

TEST_F(FormatErrors, UnknownDtype) {
  std::vector<uint8_t> data(32);
  EXPECT_THAT(load_error(container(padded(R"({"w": {"dtype": "F64", "shape": [4], "data_offsets": [0, 32]}})"), data)),
              AllOf(HasSubstr("tensor 'w' dtype 'F64' is not supported")));
  EXPECT_THAT(load_error(container(padded(R"({"w": {"dtype": 4, "shape": [4], "data_offsets": [0, 32]}})"), data)),
              HasSubstr("tensor 'w' dtype is not a string"));
  // Program names are not safetensors names.
  EXPECT_THAT(
      load_error(container(padded(R"({"w": {"dtype": "float32", "shape": [4], "data_offsets": [0, 16]}})"), data)),
      HasSubstr("tensor 'w' dtype 'float32' is not supported"));
}

TEST_F(FormatErrors, NegativeOrNonIntegerDimension) {
  std::vector<uint8_t> data(64);
  EXPECT_THAT(
      load_error(container(padded(R"({"w": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 16]}})"), data)),
      HasSubstr("tensor 'w' shape has dimension -1 outside [0, 2^40]"));
  EXPECT_THAT(load_error(container(padded(R"({"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}})"), data)),
              HasSubstr("tensor 'w' shape has a non-integer dimension"));
  EXPECT_THAT(
      load_error(container(padded(R"({"w": {"dtype": "F32", "shape": ["4"], "data_offsets": [0, 16]}})"), data)),
      HasSubstr("tensor 'w' shape has a non-integer dimension"));
  EXPECT_THAT(load_error(container(padded(R"({"w": {"dtype": "F32", "shape": 4, "data_offsets": [0, 16]}})"), data)),
              HasSubstr("tensor 'w' shape is not an array"));
  EXPECT_THAT(load_error(container(
                  padded(R"({"w": {"dtype": "U8", "shape": [1,1,1,1,1,1,1,1,1], "data_offsets": [0, 1]}})"), data)),
              HasSubstr("tensor 'w' shape has rank 9, more than 8"));
  EXPECT_THAT(load_error(container(
                  padded(R"({"w": {"dtype": "U8", "shape": [1099511627777], "data_offsets": [0, 1]}})"), data)),
              HasSubstr("tensor 'w' shape has dimension 1099511627777 outside [0, 2^40]"));
}

TEST_F(FormatErrors, ShapeProductOverflow) {
  std::vector<uint8_t> data(64);
  // 2^40 * 2^40 elements overflows int64.
  EXPECT_THAT(
      load_error(container(
          padded(R"({"w": {"dtype": "U8", "shape": [1099511627776, 1099511627776], "data_offsets": [0, 16]}})"), data)),
      HasSubstr("tensor 'w' shape [1099511627776, 1099511627776]: element count overflows"));
  // 2^62 float32 elements fit int64 but their 2^64 bytes do not fit uint64.
  EXPECT_THAT(
      load_error(container(
          padded(R"({"w": {"dtype": "F32", "shape": [1073741824, 1073741824, 4], "data_offsets": [0, 0]}})"), data)),
      HasSubstr("tensor 'w' shape [1073741824, 1073741824, 4]: element count overflows"));
}

TEST_F(FormatErrors, DataOffsetsMalformed) {
  std::vector<uint8_t> data(16);
  for (const char* offsets : {"[0]", "[0, 16, 32]", "[-4, 16]", "[0, 1.5]", "\"0-16\""}) {
    std::string h = cat(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": )", offsets, "}}");
    EXPECT_THAT(load_error(container(padded(h), data)),
                HasSubstr("tensor 'w' data_offsets is not a pair of non-negative integers"))
        << offsets;
  }
}

TEST_F(FormatErrors, DataOffsetsOutOfRange) {
  std::vector<uint8_t> data(16);
  EXPECT_THAT(load_error(container(padded(R"({"w": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}})"), data)),
              HasSubstr("tensor 'w' data_offsets [0, 32] runs past the end of the data (16 bytes)"));
}

TEST_F(FormatErrors, DataOffsetsBeginAfterEnd) {
  std::vector<uint8_t> data(16);
  EXPECT_THAT(load_error(container(padded(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [12, 8]}})"), data)),
              HasSubstr("tensor 'w' data_offsets [12, 8] ends before it begins"));
}

TEST_F(FormatErrors, OverlappingTensors) {
  std::vector<uint8_t> data(32);
  std::string h = R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                      "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})";
  EXPECT_THAT(load_error(container(padded(h), data)), HasSubstr("tensor 'b' data overlaps tensor 'a'"));
  // Same span twice.
  h = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]},
          "z": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}})";
  EXPECT_THAT(load_error(container(padded(h), data)), HasSubstr("data overlaps tensor"));
  // Touching spans and empty tensors do not overlap.
  h = R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
          "b": {"dtype": "F32", "shape": [4], "data_offsets": [16, 32]},
          "e": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]}})";
  auto ok = container(padded(h), data);
  EXPECT_NO_THROW(SafetensorsView::parse(ok.data(), ok.size(), "ok"));
}

TEST_F(FormatErrors, DtypeSizeMismatch) {
  std::vector<uint8_t> data(16);
  EXPECT_THAT(load_error(container(padded(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}})"), data)),
              HasSubstr("tensor 'w' size: data_offsets span 12 bytes but F32 [4] needs 16"));
  EXPECT_THAT(
      load_error(container(padded(R"({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 16]}})"), data)),
      HasSubstr("tensor 'w' size: data_offsets span 16 bytes but BF16 [2, 2] needs 8"));
}

TEST_F(FormatErrors, MisalignedTensorInProgram) {
  std::vector<uint8_t> data(24);
  std::string h = padded(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [2, 18]}})");
  // Checkpoints may be unaligned...
  auto bytes = container(h, data);
  EXPECT_NO_THROW(SafetensorsView::parse(bytes.data(), bytes.size(), "ckpt"));
  // ...programs may not.
  EXPECT_THAT(load_error(bytes), HasSubstr("tensor 'w' data_offsets begin 2 is not aligned to its 4-byte elements"));
  h = padded(R"({"w": {"dtype": "I64", "shape": [2], "data_offsets": [4, 20]}})");
  EXPECT_THAT(load_error(container(h, data)),
              HasSubstr("tensor 'w' data_offsets begin 4 is not aligned to its 8-byte elements"));
}

TEST_F(FormatErrors, MisalignedDataAreaInProgram) {
  std::string h = R"({"__metadata__":{}})";  // 8 + 19 bytes: data starts at byte 27
  ASSERT_NE((8 + h.size()) % 8, 0u);
  EXPECT_THAT(load_error(container(h)),
              HasSubstr(cat("data area starts at byte ", 8 + h.size(), ", not a multiple of 8")));
}

TEST_F(FormatErrors, ProgramInMemoryAtAnUnalignedAddress) {
  const std::vector<uint8_t> file = read_bytes(real_program());
  std::vector<uint64_t> words(file.size() / 8 + 2);
  uint8_t* odd = reinterpret_cast<uint8_t*>(words.data()) + 1;
  std::memcpy(odd, file.data(), file.size());
  EXPECT_THAT(error_of([&] { Program::load_memory(odd, file.size(), "odd.hfs"); }),
              AllOf(HasSubstr("odd.hfs"), HasSubstr("address that is not a multiple of 8")));
  std::memcpy(words.data(), file.data(), file.size());
  EXPECT_NO_THROW(Program::load_memory(reinterpret_cast<uint8_t*>(words.data()), file.size(), "aligned.hfs"));
}

// ---- program metadata and spec -------------------------------------------------------------

TEST_F(FormatErrors, MissingProgramMetadata) {
  EXPECT_THAT(load_error(container(padded(R"({"__metadata__": {"format": "pt"}})"))),
              AllOf(HasSubstr("bad.hfs"), HasSubstr("not an hfstatic program"), HasSubstr("'hfstatic.program'")));
  EXPECT_THAT(load_error(container(padded("{}")), "nometa.hfs"), HasSubstr("not an hfstatic program"));
}

TEST_F(FormatErrors, ProgramJsonInvalid) {
  EXPECT_THAT(load_error(container(padded(R"({"__metadata__": {"hfstatic.program": "{\"format\": "}})"))),
              HasSubstr("__metadata__.hfstatic.program is not valid JSON"));
  EXPECT_THAT(load_error(container(padded(R"({"__metadata__": {"hfstatic.program": "[]"}})"))),
              HasSubstr("program spec: not a JSON object"));
}

TEST_F(FormatErrors, SpecFormatAndVersion) {
  EXPECT_THAT(spec_error([](json& s) { s["format"] = "onnx"; }),
              AllOf(HasSubstr("spec.hfs"), HasSubstr("format 'onnx' is not 'hfstatic-program'")));
  EXPECT_THAT(spec_error([](json& s) { s["format_version"] = 4; }),
              HasSubstr("format_version 4 is not supported (supported: 1 to 3; a newer hfstatic may read it)"));
  EXPECT_THAT(spec_error([](json& s) { s["format_version"] = 0; }), HasSubstr("format_version 0 is not supported"));
  EXPECT_THAT(spec_error([](json& s) { s.erase("format_version"); }), HasSubstr("program has no 'format_version'"));
  EXPECT_THAT(spec_error([](json& s) { s["metadata"] = json::array(); }), HasSubstr("metadata is not an object"));
  EXPECT_THAT(spec_error([](json& s) { s["methods"] = json::object(); }), HasSubstr("program.methods is not an array"));
}

TEST_F(FormatErrors, QuantizedWeightsNeedFormatVersionThree) {
  // A program without quantized weights is still written as version 1.
  EXPECT_EQ(Program::load(real_program())->spec().format_version, 1);
  EXPECT_THAT(spec_error([](json& s) {
                s["methods"][0]["nodes"][0]["attrs"] = {{"weight_dtype", "int8"}, {"group_size", 32}};
              }),
              HasSubstr("spec.hfs: program spec: format_version 1 cannot hold quantized weights (a node has "
                        "attribute 'weight_dtype'); quantized programs are format_version 3"));
  EXPECT_THAT(spec_error([](json& s) {
                s["format_version"] = 2;
                s["methods"][0]["nodes"][0]["attrs"] = {{"weight_dtype", "int4"}, {"group_size", 64}};
              }),
              HasSubstr("spec.hfs: program spec: format_version 2 stores quantized weights one group after another, a "
                        "layout this hfstatic no longer reads (quantized programs are format_version 3): export the "
                        "checkpoint again"));
  Parts p = split(read_bytes(real_program()));
  const uint64_t end = p.data.size();
  p.header["q"] = {{"dtype", "I8"}, {"shape", {8}}, {"data_offsets", {end, end + 8}}};
  p.data.resize(end + 8);
  EXPECT_THAT(load_error(rebuilt(p.header, p.data), "i8.hfs"),
              HasSubstr("i8.hfs: tensor 'q' is int8, a quantized weight, but the program claims format_version 1; "
                        "quantized programs are format_version 3"));
  EXPECT_THAT(spec_error([](json& s) { s["methods"][0]["values"][0]["dtype"] = "int4"; }),
              HasSubstr("values[0].dtype 'int4' is only for weights (stored as uint8)"));
}

TEST_F(FormatErrors, SpecMissingMethodFields) {
  for (const char* field : {"inputs", "outputs", "values", "nodes"}) {
    EXPECT_THAT(spec_error([&](json& s) { s["methods"][0].erase(field); }),
                HasSubstr(cat("method 'prefill' has no '", field, "'")))
        << field;
  }
  EXPECT_THAT(spec_error([](json& s) { s["methods"][1].erase("name"); }), HasSubstr("methods[1] has no 'name'"));
  EXPECT_THAT(spec_error([](json& s) { s["methods"][0]["nodes"][2].erase("op"); }),
              HasSubstr("method 'prefill' nodes[2] has no 'op'"));
  EXPECT_THAT(spec_error([](json& s) { s["methods"][0]["nodes"][0]["inputs"] = "tokens"; }),
              HasSubstr("method 'prefill' nodes[0].inputs is not an array"));
  EXPECT_THAT(spec_error([](json& s) { s["methods"][0]["nodes"][0]["outputs"] = json::array({1}); }),
              HasSubstr("method 'prefill' nodes[0].outputs holds a non-string"));
  EXPECT_THAT(spec_error([](json& s) { s["methods"][0]["nodes"][1]["attrs"] = 5; }),
              HasSubstr("method 'prefill' nodes[1].attrs is not an object"));
  EXPECT_THAT(spec_error([](json& s) { s["methods"][0]["outputs"][0].erase("value"); }),
              HasSubstr("method 'prefill' outputs[0] has no 'value'"));
}

TEST_F(FormatErrors, SpecBadOutputMemoryKind) {
  EXPECT_THAT(spec_error([](json& s) { s["methods"][1]["outputs"][2]["memory"] = "shared"; }),
              HasSubstr("method 'decode' outputs[2].memory 'shared' is not alias, planned or unplanned"));
}

TEST_F(FormatErrors, SpecUnknownValueDtype) {
  EXPECT_THAT(spec_error([](json& s) { s["methods"][0]["inputs"][0]["dtype"] = "float64"; }),
              HasSubstr("method 'prefill' inputs[0].dtype 'float64' is not a known dtype"));
  EXPECT_THAT(spec_error([](json& s) { s["methods"][1]["values"][3]["dtype"] = "F32"; }),
              HasSubstr("method 'decode' values[3].dtype 'F32' is not a known dtype"));
}

TEST_F(FormatErrors, SpecBadValueShape) {
  EXPECT_THAT(spec_error([](json& s) {
                s["methods"][0]["values"][0]["shape"] = json::array({1, -3});
              }),
              HasSubstr("method 'prefill' values[0].shape has an invalid dimension -3"));
  EXPECT_THAT(spec_error([](json& s) {
                s["methods"][0]["values"][0]["shape"] = json::array({1, 0.5});
              }),
              HasSubstr("method 'prefill' values[0].shape has an invalid dimension 0.5"));
  EXPECT_THAT(spec_error([](json& s) {
                s["methods"][0]["values"][0]["shape"] = json::array({int64_t(1) << 40, int64_t(1) << 40});
              }),
              HasSubstr("method 'prefill' values[0].shape [1099511627776, 1099511627776] overflows"));
}

TEST_F(FormatErrors, SpecDuplicateMethod) {
  EXPECT_THAT(spec_error([](json& s) { s["methods"].push_back(s["methods"][0]); }),
              HasSubstr("method 'prefill' is defined twice"));
}

// ---- well-formed files ---------------------------------------------------------------------

template <typename T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST_F(FormatErrors, WriterRoundTripPreservesSpecWeightsAndFiles) {
  ProgramSpec spec;
  spec.metadata = {{"model_type", "test"}, {"n", 3}, {"list", {1, 2}}};
  MethodSpec m;
  m.name = "run";
  m.inputs = {{"x", DType::F32, {1, 2, 3}}};
  m.values = {{"y", DType::F32, {1, 2, 3}}};
  m.nodes = {{"copy", {"x"}, {"y"}, json::object()}};
  m.outputs = {{"out", "y", OutputMemory::Planned}};
  spec.methods.push_back(m);
  m.name = "other";
  m.outputs[0].memory = OutputMemory::Unplanned;
  spec.methods.push_back(m);

  // Odd sizes of every element size, added smallest first, to exercise the layout.
  const std::vector<uint8_t> u8 = {1, 2, 3, 4, 5};
  const std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x7bff};
  const std::vector<uint16_t> bf16 = {0x3f80, 0x4049, 0xbf00, 0x0001, 0x7f7f};
  const std::vector<float> f32 = {1.5f, -2.25f, 3e-8f};
  const std::vector<int32_t> i32 = {-7};
  const std::vector<int64_t> i64 = {int64_t(1) << 40, -1, 5};
  ProgramWriter writer(spec);
  writer.add_weight_bytes("u8", DType::U8, {5}, u8);
  writer.add_weight_bytes("f16", DType::F16, {3}, as_bytes(f16));
  writer.add_weight_bytes("bf16", DType::BF16, {5, 1}, as_bytes(bf16));
  writer.add_weight_bytes("f32", DType::F32, {3}, as_bytes(f32));
  writer.add_weight("i32", DType::I32, {1}, [&](uint8_t* dst) { std::memcpy(dst, i32.data(), 4); });
  writer.add_weight_bytes("i64", DType::I64, {3}, as_bytes(i64));
  writer.add_weight_bytes("empty", DType::F32, {0, 4}, {});
  const std::string tok = "{\"model\": {\"type\": \"BPE\"}}\n\x01\x02";
  writer.add_file("tokenizer.json", tok);
  writer.add_file("empty.txt", "");
  std::string path = dir.file("round.hfs");
  writer.write(path);

  auto p = Program::load(path);
  EXPECT_EQ(p->spec().to_json(), spec.to_json());
  EXPECT_EQ(p->metadata(), spec.metadata);
  ASSERT_NE(p->spec().find_method("other"), nullptr);
  EXPECT_EQ(p->spec().find_method("other")->outputs[0].memory, OutputMemory::Unplanned);

  auto check = [&](const std::string& name, DType dtype, const Shape& shape, const std::vector<uint8_t>& bytes) {
    SCOPED_TRACE(name);
    WeightRef w = p->weight(name);
    ASSERT_NE(w.info, nullptr);
    EXPECT_EQ(w.info->dtype, dtype);
    EXPECT_EQ(w.info->shape, shape);
    ASSERT_EQ(w.info->size, bytes.size());
    EXPECT_EQ(std::vector<uint8_t>(w.data, w.data + w.info->size), bytes);
    // Aligned to its element size, both within the data area and in memory.
    EXPECT_EQ(w.info->offset % dtype_size(dtype), 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data) % dtype_size(dtype), 0u);
  };
  check("u8", DType::U8, {5}, u8);
  check("f16", DType::F16, {3}, as_bytes(f16));
  check("bf16", DType::BF16, {5, 1}, as_bytes(bf16));
  check("f32", DType::F32, {3}, as_bytes(f32));
  check("i32", DType::I32, {1}, as_bytes(i32));
  check("i64", DType::I64, {3}, as_bytes(i64));
  check("empty", DType::F32, {0, 4}, {});
  EXPECT_EQ((8 + p->container().header_size()) % 64, 0u) << "data area must start at a 64-byte boundary";
  EXPECT_EQ(p->weight_bytes(), 5u + 6 + 10 + 12 + 4 + 24);

  EXPECT_EQ(p->embedded_file("tokenizer.json"), tok);
  EXPECT_EQ(program_embedded_file(path, "tokenizer.json"), tok);
  EXPECT_EQ(p->embedded_file("empty.txt"), "");
  EXPECT_EQ(p->embedded_file("absent.json"), "");
  EXPECT_EQ(program_embedded_file(path, "absent.json"), "");
  // Embedded files are not weights, and weights are not embedded files.
  EXPECT_EQ(p->weight("hfstatic.file.tokenizer.json").info, nullptr);
  EXPECT_EQ(p->embedded_file("u8"), "");
  EXPECT_EQ(p->weight("absent").info, nullptr);
}

TEST_F(FormatErrors, ExportedProgramIsAligned) {
  auto p = Program::load(real_program());
  EXPECT_EQ((8 + p->container().header_size()) % 64, 0u);
  ASSERT_FALSE(p->container().tensors().empty());
  for (const auto& t : p->container().tensors()) {
    EXPECT_EQ(t.offset % dtype_size(t.dtype), 0u) << t.name;
  }
  EXPECT_FALSE(p->embedded_file("config.json").empty());
  EXPECT_FALSE(program_embedded_file(real_program(), "tokenizer.json").empty());
  EXPECT_EQ(program_embedded_file(real_program(), "special_tokens_map.json"), "");
}

TEST_F(FormatErrors, WriterRejectsBadTensors) {
  ProgramWriter writer(ProgramSpec{});
  EXPECT_THAT(error_of([&] { writer.add_weight_bytes("w", DType::F32, {3}, std::vector<uint8_t>(8)); }),
              HasSubstr("tensor 'w' has 8 bytes, not matching [3]"));
  EXPECT_THAT(error_of([&] { writer.add_weight("hfstatic.file.x", DType::U8, {1}, [](uint8_t*) {}); }),
              HasSubstr("weight name 'hfstatic.file.x' uses the reserved prefix"));
  writer.add_weight_bytes("a", DType::U8, {1}, {7});
  EXPECT_THAT(error_of([&] { writer.add_weight_bytes("a", DType::U8, {1}, {8}); }),
              HasSubstr("tensor 'a' added twice"));
  EXPECT_THAT(error_of([&] { writer.add_weight("__metadata__", DType::U8, {1}, [](uint8_t*) {}); }),
              HasSubstr("'__metadata__' cannot name a tensor"));
}

TEST_F(FormatErrors, TruncatedDataNamesATensorPastTheCut) {
  std::vector<uint8_t> file = read_bytes(real_program());
  auto view = SafetensorsView::parse(file.data(), file.size(), "orig");
  const uint64_t data_start = 8 + view.header_size();
  const uint64_t cut = view.data_size() / 2;
  file.resize(data_start + cut);
  std::string e = load_error(file, "truncated.hfs");
  EXPECT_THAT(e, AllOf(HasSubstr("truncated.hfs"), HasSubstr("runs past the end of the data"),
                       HasSubstr(cat("(", cut, " bytes)"))));
  // The tensor named is one that really lies past the cut.
  bool named = false;
  for (const auto& t : view.tensors())
    if (t.offset + t.size > cut && e.find("tensor '" + t.name + "'") != std::string::npos) named = true;
  EXPECT_TRUE(named) << e;
  // One byte short is enough.
  file = read_bytes(real_program());
  file.pop_back();
  EXPECT_THAT(load_error(file, "short1.hfs"), HasSubstr("runs past the end of the data"));
}

TEST_F(FormatErrors, AddWeightBytesRejectsReservedPrefix) {
  ProgramWriter writer(ProgramSpec{});
  EXPECT_THAT(error_of([&] { writer.add_weight_bytes("hfstatic.file.x", DType::U8, {1}, {1}); }),
              HasSubstr("weight name 'hfstatic.file.x' uses the reserved prefix"));
}

TEST_F(FormatErrors, RebuiltRealProgramStillLoads) {
  // The helper used by the spec tests changes nothing by itself.
  Parts p = split(read_bytes(real_program()));
  std::string path = dir.file("same.hfs");
  write_bytes(path, rebuilt(p.header, p.data));
  auto a = Program::load(path);
  auto b = Program::load(real_program());
  EXPECT_EQ(a->spec().to_json(), b->spec().to_json());
  EXPECT_EQ(a->weight_bytes(), b->weight_bytes());
}

}  // namespace
}  // namespace hfstatic
