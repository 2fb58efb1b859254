// Hostile chat templates: integer arithmetic at the edges of 64 bits, values that contain
// themselves, and templates that would run for hours or build gigabytes (the render budget,
// chat/budget.h). Each must end in a clear Error, quickly, with the process intact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "hang_bound.h"
#include "util/error.h"

namespace hfstatic {
namespace {

using nlohmann::ordered_json;
using testing::HasSubstr;

std::string render(const std::string& tpl) { return render_chat_template(tpl, ordered_json::object()); }

std::string render_error(const std::string& tpl) {
  try {
    return "(no error) " + render(tpl).substr(0, 100);
  } catch (const Error& e) {
    return e.what();
  }
}

const std::string kMin = "(-9223372036854775807 - 1)";

TEST(ChatHostile, IntegerOverflowIsAnErrorNamingTheOperation) {
  EXPECT_THAT(render_error("{{ " + kMin + " // -1 }}"), HasSubstr("integer overflow in '//'"));
  EXPECT_EQ(render("{{ " + kMin + " % -1 }} {{ 7 // -1 }} {{ -7 % -1 }}"), "0 -7 0");
  EXPECT_THAT(render_error("{{ 9223372036854775807 + 1 }}"), HasSubstr("integer overflow in '+'"));
  EXPECT_THAT(render_error("{{ " + kMin + " - 1 }}"), HasSubstr("integer overflow in '-'"));
  EXPECT_THAT(render_error("{{ 9223372036854775807 * 2 }}"), HasSubstr("integer overflow in '*'"));
  EXPECT_THAT(render_error("{{ -" + kMin + " }}"), HasSubstr("integer overflow in '-'"));
  EXPECT_THAT(render_error("{{ 2 ** 64 }}"), HasSubstr("integer overflow in '**'"));
  EXPECT_THAT(render_error("{{ 3 ** 9223372036854775807 }}"), HasSubstr("integer overflow in '**'"));
  EXPECT_EQ(render("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ 0 ** 0 }} {{ 2 ** -1 }}"),
            "4611686018427387904 -9223372036854775808 1 0.5");
  EXPECT_THAT(render_error("{{ " + kMin + "|abs }}"), HasSubstr("abs"));
  EXPECT_EQ(render("{{ " + kMin + " is odd }} {{ (-3) is odd }}"), "False True");
  // Division and modulo by zero already were errors.
  EXPECT_THAT(render_error("{{ 1 // 0 }}"), HasSubstr("division by zero"));
  EXPECT_THAT(render_error("{{ 1 % 0 }}"), HasSubstr("division by zero"));
  EXPECT_THAT(render_error("{{ 1 / 0 }}"), HasSubstr("division by zero"));
  EXPECT_THAT(render_error("{{ 1.5 // 0.0 }}"), HasSubstr("division by zero"));
}

TEST(ChatHostile, IntegerConversionsAreChecked) {
  EXPECT_THAT(render_error("{{ (10.0 ** 300)|int }}"), HasSubstr("int: 1e+300 does not fit a 64-bit integer"));
  EXPECT_THAT(render_error("{{ ((10.0 ** 400) * 0.0)|int }}"), HasSubstr("does not fit"));  // NaN
  EXPECT_THAT(render_error("{{ '99999999999999999999'|int }}"), HasSubstr("int: '99999999999999999999'"));
  EXPECT_EQ(render("{{ '-12'|int }} {{ 3.9|int }} {{ 'x'|int }}"), "-12 3 0");
  EXPECT_EQ(render("{{ x|float }} {{ [1]|float }} {{ '2.5'|float }} {{ x|int }}"), "0.0 0.0 2.5 0");
  EXPECT_THAT(render_error("{{ range(10.0 ** 300) }}"), HasSubstr("range: "));
  EXPECT_THAT(render_error("{{ range('a') }}"), HasSubstr("range: expected a number"));
  EXPECT_THAT(render_error("{{ 'abc'[10.0 ** 300:] }}"), HasSubstr("slice: "));
  EXPECT_EQ(render("{{ [1, 2, 3][1::9223372036854775807] }} {{ 'abc'[2::" + kMin + "] }}"), "[2] c");
  EXPECT_EQ(render("{{ range(9223372036854775806, 9223372036854775807, 1000)|list }}"), "[9223372036854775806]");
  EXPECT_EQ(render("{{ range(3, -3, -2)|list }} {{ range(0, 5, 2)|list }}"), "[3, 1, -1] [0, 2, 4]");
}

TEST(ChatHostile, ListThatContainsItselfIsBounded) {
  const std::string a = "{% set a = [] %}{% set _ = a.append(a) %}";
  for (const char* use : {"{{ a }}", "{{ a|tojson }}", "{{ a|string }}", "{{ a|join }}", "{{ a ~ '' }}"})
    EXPECT_THAT(render_error(a + use), HasSubstr("nests deeper than 512 levels (a list that contains itself?)")) << use;
  // A list is equal to itself and contains itself, as in Python.
  EXPECT_EQ(render(a + "{{ a == a }} {{ a in a }} {{ [a, a]|unique|length }}"), "True True 1");
  const std::string b = "{% set b = [] %}{% set _ = b.append(b) %}";
  EXPECT_THAT(render_error(a + b + "{{ a == b }}"), HasSubstr("nests deeper than 512"));
  EXPECT_THAT(render_error(a + b + "{{ a in [b] }}"), HasSubstr("nests deeper than 512"));
  EXPECT_THAT(render_error(a + b + "{{ [a, b]|unique }}"), HasSubstr("nests deeper than 512"));
  EXPECT_THAT(render_error("{% set ns = namespace(x=1) %}{% set ns.x = ns %}{{ ns }}"),
              HasSubstr("nests deeper than 512"));
  EXPECT_THAT(render_error("{% set ns = namespace(x=1) %}{% set ns.x = ns %}{{ ns|tojson(indent=2) }}"),
              HasSubstr("nests deeper than 512"));
}

TEST(ChatHostile, SharedHalvesCannotBlowUpExponentially) {
  // 2^60 leaves: each level refers to the one before twice.
  const std::string doubled =
      "{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}"
      "{% set ns.b = [ns.b, ns.b] %}{% endfor %}{% set a = ns.a %}{% set b = ns.b %}";
  EXPECT_EQ(render(doubled + "{{ a|length }}"), "2");
  for (const char* use :
       {"{{ a }}", "{{ a|tojson }}", "{{ a|string|length }}", "{{ a == b }}", "{{ a in [b] }}", "{{ [a, b]|unique }}"})
    EXPECT_THAT(render_error(doubled + use), HasSubstr("exceeded the limit of 10000000 steps")) << use;
}

TEST(ChatHostile, DeeplyNestedValueIsFreedWithoutRecursion) {
  // A million levels of [[[...]]]: freeing it recursively would overflow the stack.
  EXPECT_EQ(render("{% set ns = namespace(x=[]) %}{% for i in range(1000000) %}{% set ns.x = [ns.x] %}{% endfor %}"
                   "{{ ns.x|length }}"),
            "1");
}

TEST(ChatHostile, WorkIsBounded) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(render_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
              HasSubstr("exceeded the limit of 10000000 steps"));
  EXPECT_THAT(render_error("{% for i in range(10000000) %}{{ i }}{% endfor %}"), HasSubstr("steps"));
  EXPECT_THAT(render_error("{{ range(10**12)|length }}"),
              HasSubstr("range() of 1000000000000 numbers exceeds the limit of 10000000 steps"));
  EXPECT_THAT(render_error("{% set s = 'x' %}{% for i in range(64) %}{% set s = s ~ s %}{% endfor %}{{ s|length }}"),
              HasSubstr("bytes exceeds the 64 MiB limit"));
  EXPECT_THAT(render_error("{% set s = 'x' %}{% for i in range(64) %}{% set s = s + s %}{% endfor %}"),
              HasSubstr("bytes exceeds the 64 MiB limit"));
  EXPECT_THAT(render_error("{{ ('x' * 10**12)|length }}"), HasSubstr("exceeds the 64 MiB limit"));
  EXPECT_THAT(render_error("{{ 'a\nb'|indent(1000000000) }}"), HasSubstr("indent: width 1000000000"));
  EXPECT_THAT(render_error("{{ ('a\n' * 1000000)|indent(100) }}"), HasSubstr("exceeds the 64 MiB limit"));
  EXPECT_THAT(
      render_error(
          "{{ ('a' * 1000000)|replace('a', "
          "'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb') }}"),
      HasSubstr("64 MiB limit"));
  EXPECT_THAT(render_error("{{ [1, [2]]|tojson(indent=1000000000) }}"), HasSubstr("tojson: indent 1000000000"));
  EXPECT_THAT(render_error("{{ [1, [2]]|tojson(indent=60000000) }}"), HasSubstr("64 MiB limit"));
  // Many strings, each under the limit: the total built in one render is bounded too.
  EXPECT_THAT(render_error("{% set s = 'x' * 60000000 %}{% for i in range(10) %}{% set t = s ~ i %}{% endfor %}"),
              HasSubstr("exceeded the limit of 256 MiB of strings built"));
  // Reading a long string over and over costs steps in proportion.
  EXPECT_THAT(
      render_error("{% set s = 'x' * 60000000 %}{% for i in range(100000) %}{% if 'y' in s %}{% endif %}{% endfor %}"),
      HasSubstr("steps"));
  EXPECT_THAT(render_error("{% set s = 'x' * 60000000 %}{% for i in range(100000) %}{{ s|length }}{% endfor %}"),
              HasSubstr("steps"));
  // Iterating over a long string is charged before its characters are made into items.
  EXPECT_THAT(render_error("{% for c in 'x' * 60000000 %}{% endfor %}"), HasSubstr("steps"));
  EXPECT_THAT(render_error("{{ ('x' * 60000000)|list|length }}"), HasSubstr("steps"));
  EXPECT_THAT(render_error("{{ ('x' * 60000000)[::-1]|length }}"), HasSubstr("steps"));
  EXPECT_EQ(render("{{ 'abcdef'[::-2] }} {{ 'abcdef'[4:0:-3] }} {{ [1, 2, 3, 4][1::2] }}"), "fdb eb [2, 4]");
  EXPECT_LT(std::chrono::steady_clock::now() - start, test::hang_bound(60));
}

TEST(ChatHostile, UniqueIsNotQuadratic) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(render("{{ range(200000)|unique|length }} {{ (range(1000)|list + range(1000)|list)|unique|length }}"),
            "200000 1000");
  EXPECT_LT(std::chrono::steady_clock::now() - start, test::hang_bound(20));
  // equal() semantics: 1 and 1.0 are the same, True and 1 are not, lists compare by value.
  EXPECT_EQ(render("{{ [1, 1.0, true, 'a', 'a', none, none, [1], [1], 0.0, -0.0]|unique }}"),
            "[1, True, 'a', None, [1], 0.0]");
}

TEST(ChatHostile, NegativeWidthsAreErrorsNamingTheFilter) {
  EXPECT_THAT(render_error("{{ 'a\nb'|indent(-1) }}"), HasSubstr("indent: width -1 is not in [0, "));
  EXPECT_THAT(render_error("{{ [1]|tojson(indent=-1) }}"), HasSubstr("tojson: indent -1 is not in [0, "));
  EXPECT_THAT(render_error("{{ [1]|tojson(indent=9223372036854775807) }}"), HasSubstr("tojson: indent"));
  EXPECT_EQ(render("{{ 'a\nb'|indent(2) }}|{{ [1]|tojson(indent=0) }}"), "a\n  b|[\n1\n]");
}

TEST(ChatHostile, BudgetErrorsNameThePosition) {
  EXPECT_THAT(render_error("ok\n{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
              HasSubstr("chat template line 2"));
}

TEST(ChatHostile, MacroRecursionIsBounded) {
  // Endless recursion ends at the depth limit, not in a stack overflow.
  EXPECT_THAT(render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
              HasSubstr("the template recurses deeper than 500 levels"));
  EXPECT_THAT(render_error("{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}"),
              HasSubstr("recurses deeper"));
  // Wide rather than deep: two calls per level is exponential work, which the step budget ends.
  EXPECT_THAT(render_error("{% macro f(n) %}{% if n < 60 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}"
                           "{{ f(0) }}"),
              HasSubstr("exceeded the limit of 10000000 steps"));
  // A macro that captures its own scope is freed after the render (no leak, checked by ASan).
  EXPECT_EQ(render("{% for i in [1] %}{% macro m() %}{{ i }}{% endmacro %}{{ m() }}{% endfor %}"), "1");
}

TEST(ChatHostile, RecursiveLoopsAreBounded) {
  // loop() over the same list forever: the depth limit ends it.
  EXPECT_THAT(render_error("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}"), HasSubstr("recurses deeper"));
  // A list that contains itself, walked recursively.
  EXPECT_THAT(render_error("{% set a = [] %}{% set _ = a.append(a) %}{% for x in a recursive %}{{ loop(x) }}"
                           "{% endfor %}"),
              HasSubstr("recurses deeper"));
  // Fan-out: every level loops over ten items, bounded by the step budget.
  EXPECT_THAT(render_error("{% set t = range(10)|list %}{% for x in t recursive %}{% if loop.depth < 9 %}"
                           "{{ loop(t) }}{% endif %}{% endfor %}"),
              HasSubstr("exceeded the limit of 10000000 steps"));
}

TEST(ChatHostile, FormatWidthsAreBounded) {
  EXPECT_THAT(render_error("{{ '{:>999999999999}'.format(1) }}"), HasSubstr("exceeds the 64 MiB string limit"));
  EXPECT_THAT(render_error("{{ '{:>67108865}'.format(1) }}"), HasSubstr("64 MiB"));
  EXPECT_THAT(render_error("{{ '%999999999999s' % 'a' }}"), HasSubstr("exceeds the 64 MiB string limit"));
  EXPECT_THAT(render_error("{{ '%.999999999999f' % 1.5 }}"), HasSubstr("exceeds the 64 MiB string limit"));
  EXPECT_THAT(render_error("{{ 'a'.center(9999999999999) }}"), HasSubstr("center(): width"));
  EXPECT_THAT(render_error("{{ '{:,}'.format(1) }}"), HasSubstr("grouping"));
  EXPECT_THAT(render_error("{{ '{' .format(1) }}"), HasSubstr("single '{'"));
  EXPECT_THAT(render_error("{{ '{0[a}'.format({'a': 1}) }}"), HasSubstr("'[' without ']'"));
  EXPECT_THAT(render_error("{{ [1]|batch(9999999, 0) }}"), HasSubstr("exceeded the limit of 10000000 steps"));
  EXPECT_THAT(render_error("{{ [1]|batch(9223372036854775807, 0) }}"), HasSubstr("batch: the size must be in"));
  // Precision is capped: a float prints at most 100 digits after the point.
  EXPECT_EQ(render("{{ '%.3f' % 2.0 }} {{ '{:.1e}'.format(12345.0) }}"), "2.000 1.2e+04");
  EXPECT_THAT(render_error("{{ 'x' * 10 | tojson(indent=100000000) }}"), HasSubstr("tojson: indent"));
}

TEST(ChatHostile, PercentCIsACharacterOrAnError) {
  EXPECT_EQ(render("{{ '%c' % 65 }}{{ '%c' % 233 }}{{ '%c' % 8364 }}{{ '%c' % 128512 }}"), "A\u00e9\u20ac\U0001F600");
  EXPECT_THAT(render_error("{{ '%c' % 1114112 }}"), HasSubstr("%c arg not in range(0x110000)"));
  EXPECT_THAT(render_error("{{ '%c' % -1 }}"), HasSubstr("%c arg not in range(0x110000)"));
  EXPECT_THAT(render_error("{{ '%c' % 55296 }}"), HasSubstr("surrogate 55296"));
}

TEST(ChatHostile, ReplacingTheEmptyStringInsertsBetweenCharacters) {
  EXPECT_EQ(render("{{ 'ab'.replace('', '-') }}|{{ 'ab'.replace('', '-', 2) }}|{{ ''.replace('', 'x') }}"),
            "-a-b-|-a-b|x");
  EXPECT_EQ(render("{{ '\u00e9t\u00e9' | replace('', '.') }}|{{ 'ab'.replace('', '-', 0) }}"), ".\u00e9.t.\u00e9.|ab");
  // 2 MiB of characters with 64 bytes between each would make 128 MiB: refused before it is built.
  EXPECT_THAT(render_error("{% set s = 'x' * 2097152 %}{{ s.replace('', '" + std::string(64, 'y') + "') | length }}"),
              HasSubstr("MiB"));
}

}  // namespace
}  // namespace hfstatic
