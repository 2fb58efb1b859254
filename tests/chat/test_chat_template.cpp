// Unit tests of the chat-template interpreter (expected outputs written by hand).
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "util/error.h"

namespace hfstatic {
namespace {

using nlohmann::ordered_json;

std::string render(const std::string& tpl, const ordered_json& ctx = ordered_json::object()) {
  return render_chat_template(tpl, ctx);
}

std::string render_error(const std::string& tpl, const ordered_json& ctx = ordered_json::object()) {
  try {
    render(tpl, ctx);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ChatTemplate, ExpressionsFiltersAndTests) {
  EXPECT_EQ(render("{{ 'a' ~ (1 + 2) }}{{ 'b' ~ 3 * 2 }}"), "a3b6");
  EXPECT_EQ(render("{{ ' x '|trim ~ '|' }}"), "x|");
  EXPECT_EQ(render("{{ [1,2,3]|length }} {{ 'héllo'|length }}"), "3 5");
  EXPECT_EQ(render("{{ x is defined }} {{ y is not defined }}", {{"x", 1}}), "True True");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 not in [1,2] }}"), "True False");
  EXPECT_EQ(render("{{ 'abcdef'[1:3] }}{{ [1,2,3][::-1]|join(',') }}{{ 'xyz'[-1] }}"), "bc3,2,1z");
  EXPECT_EQ(render("{{ {'a': 1, 'b': [true, none]}|tojson }}"), "{\"a\": 1, \"b\": [true, null]}");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',')|length }} {{ '  x\n'.strip() }} {{ 'abc'.startswith('ab') }}"), "4 x True");
  EXPECT_EQ(render("{{ 7 // 2 }} {{ 7 % 3 }} {{ -7 // 2 }} {{ 2 ** 3 }}"), "3 1 -4 8");
  EXPECT_EQ(render("{{ 'yes' if 1 > 2 else 'no' }}"), "no");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"z", 1}, {"a", 2}}}}),
            "z=1;a=2;");
  EXPECT_EQ(render("{{ xs|selectattr('r', 'equalto', 'u')|map(attribute='c')|join }}",
                   {{"xs", ordered_json::array(
                               {{{"r", "u"}, {"c", "1"}}, {{"r", "a"}, {"c", "2"}}, {{"r", "u"}, {"c", "3"}}})}}),
            "13");
}

TEST(ChatTemplate, StatementsLoopsAndNamespaces) {
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ x }}{% if loop.first %}F{% elif loop.last %}L{% else %}-{% "
                   "endif %}{% endfor %}",
                   {{"xs", {"a", "b", "c"}}}),
            "1aF2b-3cL");
  EXPECT_EQ(
      render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
      "6");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1,2,3,4] if x is even %}{{ x }}{% endfor %}"), "24");
  EXPECT_EQ(render("{% for x in [1,2,3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}"), "1");
  EXPECT_EQ(render("{# comment #}a{% set x = 'q' %}{{ x }}"), "aq");
}

TEST(ChatTemplate, WhitespaceControlTrimAndLstripBlocks) {
  EXPECT_EQ(render("a  {{- 'b' -}}  c"), "abc");
  // trim_blocks removes the newline after a block tag; lstrip_blocks removes indentation before it.
  EXPECT_EQ(render("{% if true %}\n    x\n    {% endif %}\ny"), "    x\ny");
  EXPECT_EQ(render("{%- if true -%}\n  x  \n{%- endif %}"), "x");
  EXPECT_EQ(render("{{ 'a' }}\n{{ 'b' }}"), "a\nb");
}

TEST(ChatTemplate, ErrorsHaveAPosition) {
  const std::string unterminated = render_error("line one\n{% if x %}never closed");
  EXPECT_NE(unterminated.find("line 2"), std::string::npos) << unterminated;
  EXPECT_NE(unterminated.find("endif"), std::string::npos) << unterminated;
  const std::string bad_expr = render_error("{{ 1 + }}");
  EXPECT_NE(bad_expr.find("line 1 col"), std::string::npos) << bad_expr;
  const std::string raised = render_error("ab\n  {{ raise_exception('roles must alternate') }}");
  EXPECT_NE(raised.find("line 2 col 6"), std::string::npos) << raised;
  EXPECT_NE(raised.find("roles must alternate"), std::string::npos) << raised;
  EXPECT_NE(render_error("{{ x|nosuchfilter }}").find("nosuchfilter"), std::string::npos);
  EXPECT_NE(render_error("{% include 'other.jinja' %}").find("include"), std::string::npos);
}

// A message's content: a string, null, or text parts joined; an image part (what a multimodal
// template such as Gemma 3's turns into <start_of_image>) is refused, naming the part.
TEST(ChatTemplate, MessageTextJoinsTextPartsAndRefusesImages) {
  using nlohmann::json;
  auto error = [](const json& content) {
    try {
      message_text(content, "messages[2].content");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message_text("Hi", "m"), "Hi");
  EXPECT_EQ(message_text(nullptr, "m"), "");
  EXPECT_EQ(
      message_text(json::parse(R"([{"type": "text", "text": "Describe "}, {"type": "text", "text": "this."}])"), "m"),
      "Describe this.");
  EXPECT_EQ(error(json::parse(R"([{"type": "text", "text": "What is in "}, {"type": "image"}])")),
            "messages[2].content[1]: an image part ('image') is not supported: the program is a text model (a "
            "multimodal checkpoint exports its language model alone)");
  EXPECT_EQ(error(json::parse(R"([{"type": "image_url", "image_url": {"url": "x.png"}}])")),
            "messages[2].content[0]: an image part ('image_url') is not supported: the program is a text model (a "
            "multimodal checkpoint exports its language model alone)");
  EXPECT_EQ(error(json::parse(R"([{"type": "audio"}])")),
            "messages[2].content[0]: content part type 'audio' is not supported (only 'text')");
  EXPECT_EQ(error(json::parse(R"([{"type": "text", "text": 5}])")), "messages[2].content[0].text: expected a string");
  EXPECT_EQ(error(json::parse(R"(["hi"])")),
            "messages[2].content[0]: expected a content part, an object with a 'type'");
  EXPECT_EQ(error(5), "messages[2].content: expected a string or a list of content parts");
}

}  // namespace
}  // namespace hfstatic
