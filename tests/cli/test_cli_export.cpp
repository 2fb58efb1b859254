// hfstatic export, inspect and make-checkpoint from the command line: exit codes, one-line
// errors, nothing left behind, and what inspect prints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "export/make_checkpoint.h"
#include "format/program.h"
#include "test_support.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace hfstatic {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::list_dir;
using test::write_file;
using testing::AllOf;
using testing::HasSubstr;
using testing::Not;

class CliExport : public test::CheckpointTest {
 protected:
  CliExport() : CheckpointTest("cli-export") {}
  std::string export_ok(const std::string& ckpt, const GraphOptions& g) {
    std::string out = dir.file(cat("ok", count_++, ".hfs"));
    test::export_to(ckpt, out, g);
    return out;
  }
};

size_t count_lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

TEST_F(CliExport, CliExportBadFlagExitsTwo) {
  auto c = checkpoint();
  std::string out = dir.file("cli.hfs");
  auto r = test::run_cli({"export", c, "-o", out, "--bogus"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("unknown flag --bogus"));
  EXPECT_FALSE(fs::exists(out));
  r = test::run_cli({"export", c, "-o", out, "--max-context", "1x"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--max-context"));
  r = test::run_cli({"export", c, "-o", out, "--weights-dtype", "int3"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("flag --weights-dtype: 'int3' is not one of float32|float16|bfloat16|int8|int4"));
  r = test::run_cli({"export", c});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("missing -o FILE"));
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(CliExport, CliExportBadCheckpointExitsOneWithOneLine) {
  auto c = checkpoint();
  edit_config(c, [](json& j) { j["hidden_act"] = "gelu"; });
  std::string out_dir = dir.file("cli-out");
  fs::create_directories(out_dir);
  auto r = test::run_cli({"export", c, "-o", out_dir + "/p.hfs"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("hfstatic export: error:"),
                           HasSubstr("config field 'hidden_act' = \"gelu\" is not supported")));
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(list_dir(out_dir), std::vector<std::string>{});

  r = test::run_cli({"export", dir.file("missing"), "-o", out_dir + "/p.hfs"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no config.json"));
  EXPECT_EQ(list_dir(out_dir), std::vector<std::string>{});
}

TEST_F(CliExport, CliExportWritesAProgram) {
  auto c = checkpoint();
  std::string out = dir.file("cli-ok.hfs");
  auto r = test::run_cli(
      {"export", c, "-o", out, "--prefill-len", "4", "--max-context", "16", "--weights-dtype", "float16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(cat("wrote ", out, ": ")));
  auto p = Program::load(out);
  EXPECT_EQ(p->metadata()["max_context"], 16);
  EXPECT_EQ(p->metadata()["weights_dtype"], "float16");
  EXPECT_THAT(r.out, Not(HasSubstr("skipped")));
}

// A Gemma 3 multimodal checkpoint: the summary says what was left out.
TEST_F(CliExport, CliExportSaysWhatAMultimodalCheckpointLeavesOut) {
  auto c = checkpoint("tiny-gemma3-mm");
  std::string out = dir.file("mm.hfs");
  auto r = test::run_cli({"export", c, "-o", out, "--prefill-len", "4", "--max-context", "16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nskipped 7 tensors of the vision tower and multi-modal projector: the program is "
                               "the language model alone\n"));
  EXPECT_EQ(Program::load(out)->metadata()["model_type"], "gemma3");
}

// True if one line of `text` holds every part, in order.
bool has_line(const std::string& text, const std::vector<std::string>& parts) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = 0;
    bool all = true;
    for (const auto& p : parts) {
      at = line.find(p, at);
      if (at == std::string::npos) {
        all = false;
        break;
      }
      at += p.size();
    }
    if (all) return true;
  }
  return false;
}

TEST_F(CliExport, CliInspectPrintsEverySignature) {
  GraphOptions g;
  g.prefill_len = 4;
  g.max_context = 16;
  std::string path = export_ok(test::cached_checkpoint("tiny", 4), g);
  auto r = test::run_cli({"inspect", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = Program::load(path);
  ASSERT_EQ(p->spec().methods.size(), 2u);
  for (const auto& m : p->spec().methods) {
    SCOPED_TRACE(m.name);
    EXPECT_TRUE(has_line(r.out, {cat("method ", m.name, ": ", m.inputs.size(), " inputs, ", m.outputs.size(),
                                     " outputs, ", m.nodes.size(), " nodes, arena ")}))
        << r.out;
    for (size_t i = 0; i < m.inputs.size(); ++i)
      EXPECT_TRUE(has_line(r.out, {"input", cat(" ", i, " "), m.inputs[i].name + " ", dtype_name(m.inputs[i].dtype),
                                   shape_str(m.inputs[i].shape)}))
          << m.inputs[i].name;
    for (size_t i = 0; i < m.outputs.size(); ++i) {
      const ValueSpec* v = m.output_value(i);
      ASSERT_NE(v, nullptr);
      std::vector<std::string> parts = {"output",
                                        cat(" ", i, " "),
                                        m.outputs[i].name + " ",
                                        dtype_name(v->dtype),
                                        shape_str(v->shape),
                                        output_memory_name(m.outputs[i].memory)};
      if (m.outputs[i].memory == OutputMemory::Alias) parts.push_back("-> " + m.outputs[i].value);
      EXPECT_TRUE(has_line(r.out, parts)) << m.outputs[i].name;
    }
  }
  // A few lines spelled out.
  EXPECT_TRUE(has_line(r.out, {"method prefill: 9 inputs, 7 outputs"})) << r.out;
  EXPECT_TRUE(has_line(r.out, {"input", " 0 ", "tokens", "int64", "[1, 4]"}));
  EXPECT_TRUE(has_line(r.out, {"input", " 2 ", "mask", "float32", "[1, 1, 4, 16]"}));
  EXPECT_TRUE(has_line(r.out, {"input", " 3 ", "k_cache_0", "float32", "[1, 2, 16, 16]"}));
  EXPECT_TRUE(has_line(r.out, {"output", " 6 ", "logits", "float32", "[1, 4, 272]", "planned"}));
  EXPECT_TRUE(has_line(r.out, {"output", " 6 ", "logits", "float32", "[1, 1, 272]", "planned"}));
  EXPECT_TRUE(has_line(r.out, {"output", " 2 ", "counter_0_updated", "int64", "[1]", "alias", "-> counter_0"}));
  EXPECT_TRUE(has_line(r.out, {"embedded file: tokenizer.json"}));
  EXPECT_THAT(r.out, Not(HasSubstr("invalid graph")));

  auto bad = test::run_cli({"inspect", dir.file("none.hfs")});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("none.hfs"));
}

TEST_F(CliExport, CliMakeCheckpointUnknownPreset) {
  std::string out = dir.file("new-ckpt");
  auto r = test::run_cli({"make-checkpoint", "--preset", "nope", "-o", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("unknown preset 'nope'"));
  for (const auto& p : checkpoint_presets()) EXPECT_THAT(r.err, HasSubstr(p.name));
  EXPECT_FALSE(fs::exists(out)) << "nothing may be written for an unknown preset";
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;

  r = test::run_cli({"make-checkpoint", "--list"});
  EXPECT_EQ(r.exit_code, 0);
  for (const auto& p : checkpoint_presets()) EXPECT_TRUE(has_line(r.out, {p.name, p.description})) << p.name;
}

}  // namespace
}  // namespace hfstatic
