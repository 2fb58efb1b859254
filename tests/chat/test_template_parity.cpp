// Parity of the chat-template engine with Hugging Face's Jinja reference (@huggingface/jinja,
// tools/tokenizer-reference/chat_families.mjs) on the real templates of many model families
// (tests/chat/templates): every template over conversations with and without a system message,
// multi-turn, tools with tool calls and results, documents, thinking on and off, each with and
// without the generation prompt. Where the reference departs from Python Jinja2 (what
// transformers renders with; tools/tokenizer-reference/chat_jinja2.py renders the same cases),
// we follow Jinja2: each kind of such case is listed in kJinja2Deviations with the reason.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>

#include "chat/chat_template.h"
#include "util/error.h"

namespace hfstatic {
namespace {

using nlohmann::ordered_json;

const std::string kReferenceDir = std::string(HFSTATIC_SOURCE_DIR) + "/tools/tokenizer-reference";
const std::string kTemplatesDir = std::string(HFSTATIC_SOURCE_DIR) + "/tests/chat/templates";

// 26 Jul 2024 00:00, the time the reference's strftime_now() formats.
ChatTemplateOptions fixed_clock() {
  ChatTemplateOptions options;
  options.now = [] {
    std::tm t{};
    t.tm_year = 124;
    t.tm_mon = 6;
    t.tm_mday = 26;
    t.tm_wday = 5;
    t.tm_yday = 207;
    return t;
  };
  return options;
}

std::string reference_problem() {
  const std::string hint = " Run scripts/install-test-references.sh to install the Hugging Face reference packages.";
  if (std::string(HFSTATIC_NODE).empty()) return "node (Node.js) was not found when configuring CMake." + hint;
  if (!std::ifstream(kReferenceDir + "/node_modules/@huggingface/jinja/package.json"))
    return kReferenceDir + "/node_modules/@huggingface/jinja is missing." + hint;
  return {};
}

std::string run(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  std::string out;
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  if (pclose(p) != 0) throw std::runtime_error("command failed: " + cmd);
  return out;
}

// The JS reference's cases, and Python Jinja2's results for the same cases (null when Python or
// its jinja2 package is missing).
std::pair<ordered_json, ordered_json> run_references() {
  const std::string cases_file = std::string(HFSTATIC_BINARY_DIR) + "/chat_template_parity_cases.json";
  run("cd '" + kReferenceDir + "' && '" + std::string(HFSTATIC_NODE) + "' chat_families.mjs '" + kTemplatesDir +
      "' > '" + cases_file + "'");
  ordered_json cases = ordered_json::parse(std::ifstream(cases_file));
  // The test Python, else the one on the PATH: the first that has jinja2.
  for (const std::string& python : {std::string(HFSTATIC_PYTHON), std::string("python3")}) {
    if (std::system(("'" + python + "' -c 'import jinja2' > /dev/null 2>&1").c_str()) != 0) continue;
    return {cases,
            ordered_json::parse(run("'" + python + "' '" + kReferenceDir + "/chat_jinja2.py' < '" + cases_file + "'"))};
  }
  std::printf("chat template parity: no Python with jinja2; cases where the references may disagree are skipped\n");
  return {cases, ordered_json()};
}

// Where the JS reference and Python Jinja2 (what transformers renders with) disagree, we follow
// Jinja2. Each kind of disagreement, found in the reference's error or Python's, and the reason.
const std::pair<const char*, const char*> kJinja2Deviations[] = {
    {"Expected iterable or object type in for loop: got UndefinedValue",
     "Jinja2 iterates an undefined value as an empty sequence (templates loop over `tools` unchecked)"},
    {"Expected iterable or object type in for loop: got StringValue",
     "Jinja2 iterates a string by characters (a vision template loops over string content)"},
    {"Cannot apply filter \"trim\" to type: NullValue", "Jinja2's trim converts its value with str(): none is 'None'"},
    {"Cannot apply filter \"trim\" to type: UndefinedValue", "Jinja2's trim converts undefined to ''"},
    {"Unknown ObjectValue filter: string", "Jinja2's string filter converts any value with str()"},
    {"can only concatenate str (not \"dict\") to str",
     "Python's '+' does not join a string and a mapping; the JS reference converts the mapping"},
};

const char* deviation_reason(const std::string& js_error, const std::string& python_error) {
  for (const auto& [error, reason] : kJinja2Deviations)
    if (js_error.find(error) != std::string::npos || python_error.find(error) != std::string::npos) return reason;
  return nullptr;
}

struct Result {
  bool ok = false;
  std::string text;  // the output, or the error
};

Result reference_result(const ordered_json& r) {
  if (r["error"].is_null()) return {true, r["expected"].get<std::string>()};
  return {false, r["error"].get<std::string>()};
}

struct Counts {
  std::string family;
  int conversations = 0, identical = 0, both_fail = 0, jinja2 = 0;
};

void check_case(const ordered_json& c, const ordered_json* python, const ChatTemplateOptions& clock, Counts& counts) {
  const std::string label = c["name"].get<std::string>() + " " + c["conversation"].get<std::string>() +
                            " agp=" + c["context"]["add_generation_prompt"].dump();
  Result got;
  try {
    got = {true, render_chat_template(c["template"].get<std::string>(), c["context"], clock)};
  } catch (const Error& e) {
    got = {false, e.what()};
  }
  const Result js = reference_result(c);
  Result expected = js;
  if (python) {
    const Result py = reference_result(*python);
    if (py.ok != js.ok || (py.ok && py.text != js.text)) {
      const char* reason = deviation_reason(js.ok ? "" : js.text, py.ok ? "" : py.text);
      EXPECT_NE(reason, nullptr) << label << ": undocumented disagreement of the references: JS "
                                 << (js.ok ? "renders" : js.text) << ", Python " << (py.ok ? "renders" : py.text);
      expected = py;
      counts.jinja2 += got.ok == py.ok && (!py.ok || got.text == py.text);
    }
  } else if (!js.ok && deviation_reason(js.text, "")) {
    return;  // what Jinja2 does is unknown without Python
  }
  if (expected.ok) {
    EXPECT_TRUE(got.ok) << label << ": " << got.text;
    EXPECT_EQ(got.text, expected.text) << label;
    counts.identical += got.ok && got.text == expected.text && js.ok && js.text == expected.text;
  } else {
    EXPECT_FALSE(got.ok) << label << ": expected an error like " << expected.text << ", rendered:\n" << got.text;
    counts.both_fail += !got.ok && !js.ok;
  }
}

TEST(ChatTemplateParity, RealTemplatesMatchHuggingFaceJinja) {
  const std::string problem = reference_problem();
  if (!problem.empty()) FAIL() << problem;
  ordered_json cases, python;
  try {
    std::tie(cases, python) = run_references();
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
  const ChatTemplateOptions clock = fixed_clock();
  std::map<std::string, Counts> per_template;
  for (size_t i = 0; i < cases["cases"].size(); ++i) {
    const ordered_json& c = cases["cases"][i];
    Counts& counts = per_template[c["name"].get<std::string>()];
    counts.family = c["family"];
    ++counts.conversations;
    check_case(c, python.is_array() ? &python[i] : nullptr, clock, counts);
  }
  std::map<std::string, Counts> per_family;
  for (const auto& [name, counts] : per_template) {
    std::printf("chat template parity %-18s %-26s %2d conversations: %2d identical, %2d both fail, %2d follow Jinja2\n",
                name.c_str(), counts.family.c_str(), counts.conversations, counts.identical, counts.both_fail,
                counts.jinja2);
    Counts& f = per_family[counts.family];
    f.conversations += counts.conversations;
    f.identical += counts.identical;
    f.both_fail += counts.both_fail;
    f.jinja2 += counts.jinja2;
  }
  EXPECT_GE(per_family.size(), 15u);
  Counts all;
  for (const auto& [family, f] : per_family) {
    std::printf(
        "chat template parity family %-26s %3d conversations: %3d identical, %2d both fail, %2d follow Jinja2\n",
        family.c_str(), f.conversations, f.identical, f.both_fail, f.jinja2);
    all.conversations += f.conversations, all.identical += f.identical, all.both_fail += f.both_fail;
    all.jinja2 += f.jinja2;
  }
  std::printf(
      "chat template parity: %zu families, %zu templates, %d conversations: %d identical, %d both fail, "
      "%d follow Jinja2 where the JS reference departs from it\n",
      per_family.size(), per_template.size(), all.conversations, all.identical, all.both_fail, all.jinja2);
}

}  // namespace
}  // namespace hfstatic
