// Unit tests of the Jinja constructs real chat templates use beyond the basics: macros, call
// blocks, block set, filter blocks, recursive loops, loop helpers, string and mapping methods,
// Python formatting, tojson's options and the globals. Expected outputs follow Python Jinja2
// (trim_blocks, lstrip_blocks) and Python's str methods, written by hand.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "util/error.h"

namespace hfstatic {
namespace {

using nlohmann::ordered_json;

std::string render(const std::string& tpl, const ordered_json& ctx = ordered_json::object(),
                   const ChatTemplateOptions& options = {}) {
  return render_chat_template(tpl, ctx, options);
}

std::string render_error(const std::string& tpl, const ordered_json& ctx = ordered_json::object()) {
  try {
    return "(no error) " + render(tpl, ctx);
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(ChatConstructs, MacrosTakePositionalKeywordAndDefaultArguments) {
  EXPECT_EQ(render("{% macro greet(name, greeting='Hello', punct='!') %}{{ greeting }}, {{ name }}{{ punct }}"
                   "{% endmacro %}{{ greet('Ann') }}|{{ greet('Bob', 'Hi') }}|{{ greet(punct='?', name='Cy') }}"),
            "Hello, Ann!|Hi, Bob!|Hello, Cy?");
  // A missing argument is undefined; extra ones land in varargs and kwargs.
  EXPECT_EQ(render("{% macro m(a, b) %}[{{ a }}|{{ b is defined }}|{{ varargs|length }}|{{ kwargs.k }}]{% endmacro %}"
                   "{{ m(1) }}{{ m(1, 2, 3, 4, k='v') }}"),
            "[1|False|0|][1|True|2|v]");
  // Defaults may use earlier parameters; macros see the template's variables, not the caller's.
  EXPECT_EQ(render("{% macro m(a, b=a * 2) %}{{ a }}{{ b }}{{ top }}{% endmacro %}{% set top = 'T' %}"
                   "{% for x in [5] %}{{ m(x) }}{% endfor %}"),
            "510T");
  // Recursion, and a macro's own variables do not leak out.
  EXPECT_EQ(render("{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}"
                   "{{ fact(5) }}"),
            "120");
  EXPECT_EQ(render("{% macro m() %}{% set inner = 1 %}{% endmacro %}{{ m() }}{{ inner is defined }}"), "False");
}

TEST(ChatConstructs, MacrosWorkWithNamespacesAndAsValues) {
  // A namespace passed to a macro is shared: attribute assignment inside changes the caller's.
  EXPECT_EQ(render("{% macro bump(ns) %}{% set ns.n = ns.n + 1 %}{% endmacro %}{% set ns = namespace(n=0) %}"
                   "{% for i in range(3) %}{{ bump(ns) }}{% endfor %}{{ ns.n }}"),
            "3");
  EXPECT_EQ(render("{% set ns = namespace(a=1, b='x') %}{% set ns.c = [ns.a, ns.b] %}{{ ns.c }}"), "[1, 'x']");
  EXPECT_EQ(render("{% set d = dict(a=1, b=2) %}{{ d|tojson }} {{ dict({'x': 0}, y=1)|tojson }}"),
            "{\"a\": 1, \"b\": 2} {\"x\": 0, \"y\": 1}");
  EXPECT_EQ(render("{% macro m() %}x{% endmacro %}{{ m is callable }} {{ range is defined }} {{ 1 is callable }}"),
            "True True False");
}

TEST(ChatConstructs, CallBlocksPassCaller) {
  EXPECT_EQ(render("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
                   "{% for w in ['a'] %}{% call wrap('b') %}{{ w }}!{% endcall %}{% endfor %}"),
            "<b>a!</b>");
  EXPECT_EQ(render("{% macro each(items) %}{% for i in items %}{{ caller(i, loop.index) }};{% endfor %}{% endmacro %}"
                   "{% call(item, n) each(['x', 'y']) %}{{ n }}={{ item }}{% endcall %}"),
            "1=x;2=y;");
}

TEST(ChatConstructs, BlockSetAndFilterBlocks) {
  EXPECT_EQ(render("{% set x %}\n  a {{ 1 + 1 }}\n{% endset %}[{{ x }}]"), "[  a 2\n]");
  EXPECT_EQ(render("{% set x | trim | upper %}  ab  {% endset %}[{{ x }}]"), "[AB]");
  EXPECT_EQ(render("{% set ns = namespace(t='') %}{% set ns.t %}v{% endset %}{{ ns.t }}"), "v");
  EXPECT_EQ(render("{% filter upper %}ab{{ 'c' }}{% endfilter %}"), "ABC");
  EXPECT_EQ(render("{% filter replace('a', 'o')|trim %}  banana  {% endfilter %}|"), "bonono|");
  EXPECT_EQ(render("{% generation %}reply{% endgeneration %}"), "reply");
}

TEST(ChatConstructs, RecursiveLoopsAndLoopHelpers) {
  const ordered_json tree = {{"tree",
                              {{{"n", "a"}, {"kids", {{{"n", "b"}, {"kids", ordered_json::array()}}}}},
                               {{"n", "c"}, {"kids", ordered_json::array()}}}}};
  EXPECT_EQ(
      render("{% for x in tree recursive %}{{ x.n }}{{ loop.depth }}{% if x.kids %}({{ loop(x.kids) }}){% endif %}"
             "{% endfor %}",
             tree),
      "a1(b2)c1");
  EXPECT_EQ(render("{% for x in tree recursive %}{{ loop.depth0 }}{{ loop(x.kids) }}{% endfor %}", tree), "010");
  EXPECT_EQ(render("{% for x in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}"), "ababa");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }};{% endfor %}"),
            "<1>2;1<2>3;2<3>;");
  EXPECT_EQ(render("{% for x in [1, 1, 2, 2, 1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}"), "121");
  EXPECT_EQ(render("{% for x in range(6) %}{% if x is odd %}{% continue %}{% endif %}{% if x > 3 %}{% break %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "02");
  EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}"), "37");
  EXPECT_NE(render_error("{% break %}").find("'break' outside a for loop"), std::string::npos);
  EXPECT_NE(render_error("{% for x in [1] %}{% macro m() %}{% break %}{% endmacro %}{% endfor %}").find("outside"),
            std::string::npos);
}

TEST(ChatConstructs, StringMethods) {
  EXPECT_EQ(render("{{ 'a,b,c'.split(',', 1) }} {{ ' a  b c '.split() }} {{ 'a b c'.split(none, 1) }}"),
            "['a', 'b,c'] ['a', 'b', 'c'] ['a', 'b c']");
  EXPECT_EQ(render("{{ 'a,b,c'.rsplit(',', 1) }} {{ 'x\\ny\\r\\nz'.splitlines() }}"), "['a,b', 'c'] ['x', 'y', 'z']");
  EXPECT_EQ(render("{{ 'xxhixx'.strip('x') }} {{ '--a--'.lstrip('-') }} {{ '--a--'.rstrip('-') }}"), "hi a-- --a");
  EXPECT_EQ(render("{{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'aaa'.replace('a', 'b', 2) }}"),
            "Hello World Hello bba");
  EXPECT_EQ(render("{{ 'abcabc'.find('c') }} {{ 'abcabc'.rfind('c') }} {{ 'abcabc'.find('c', 3) }} "
                   "{{ 'abcabc'.count('bc') }} {{ 'abc'.find('z') }}"),
            "2 5 5 2 -1");
  EXPECT_EQ(render("{{ '123'.isdigit() }} {{ '12a'.isdigit() }} {{ ''.isdigit() }} {{ 'ab'.isalpha() }} "
                   "{{ 'AB1'.isupper() }} {{ '1'.islower() }}"),
            "True False False True True False");
  EXPECT_EQ(render("{{ '-'.join(['a', 'b']) }} {{ 'ab'.startswith(('x', 'a')) }} {{ 'pre_x'.removeprefix('pre_') }}"),
            "a-b True x");
  EXPECT_EQ(render("{{ 'ab'.center(6, '*') }}|{{ 'ab'.ljust(4) }}|{{ '7'.zfill(3) }}"), "**ab**|ab  |007");
}

TEST(ChatConstructs, PythonFormatting) {
  EXPECT_EQ(render("{{ '{} and {}'.format('a', 1) }}|{{ '{1}{0}{1}'.format('x', 'y') }}|{{ '{n}!'.format(n=3) }}"),
            "a and 1|yxy|3!");
  EXPECT_EQ(render("{{ '{:>5}|{:<4}|{:^7}|{:05d}|{:.2f}|{{}}'.format('ab', 'c', 'mid', 42, 3.14159) }}"),
            "   ab|c   |  mid  |00042|3.14|{}");
  EXPECT_EQ(render("{{ '{0[k]} {0.k} {1!r}'.format(d, 'q') }}", {{"d", {{"k", "v"}}}}), "v v 'q'");
  EXPECT_EQ(render("{{ '%s is %d years, %.1f%%' % ('Al', 30, 99.25) }}|{{ '%5s|%-3d|' % ('ab', 7) }}"),
            "Al is 30 years, 99.2%|   ab|7  |");
  EXPECT_EQ(render("{{ '%(a)s-%(b)03d' % {'a': 'x', 'b': 5} }} {{ 'v=%s' % none }} {{ '%s'|format(2) }}"),
            "x-005 v=None 2");
  EXPECT_NE(render_error("{{ '{} {}'.format(1) }}").find("no positional argument 1"), std::string::npos);
  EXPECT_NE(render_error("{{ '%s %s' % ('a',) }}").find("not enough arguments"), std::string::npos);
}

TEST(ChatConstructs, TojsonTakesTransformersArguments) {
  const ordered_json ctx = {{"x", {{"b", 1}, {"a", {"é", true, nullptr, 1.5}}}}};
  EXPECT_EQ(render("{{ x|tojson }}", ctx), "{\"b\": 1, \"a\": [\"é\", true, null, 1.5]}");
  EXPECT_EQ(render("{{ x|tojson(indent=2) }}", ctx),
            "{\n  \"b\": 1,\n  \"a\": [\n    \"é\",\n    true,\n    null,\n    1.5\n  ]\n}");
  EXPECT_EQ(render("{{ x|tojson(separators=(',', ':'), sort_keys=true) }}", ctx),
            "{\"a\":[\"é\",true,null,1.5],\"b\":1}");
  EXPECT_EQ(render("{{ x|tojson(ensure_ascii=true) }} {{ '😀'|tojson(true) }}", ctx),
            "{\"b\": 1, \"a\": [\"\\u00e9\", true, null, 1.5]} \"\\ud83d\\ude00\"");
  EXPECT_EQ(render("{{ [1, {}]|tojson(indent='\\t') }} {{ 'a\"\\\\\\n\x01'|tojson }}"),
            "[\n\t1,\n\t{}\n] \"a\\\"\\\\\\n\\u0001\"");
}

TEST(ChatConstructs, FiltersAndTests) {
  EXPECT_EQ(render("{{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.1|round(0, 'ceil') }} {{ (-3)|abs }} {{ "
                   "'4'|int + 1 }}"),
            "2.57 2.0 4.0 3.0 3 5");
  EXPECT_EQ(render("{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort(reverse=true) }} {{ "
                   "xs|sort(attribute='k')|map(attribute='k')|list }}",
                   {{"xs", {{{"k", 2}}, {{"k", 1}}}}}),
            "[1, 2, 3] ['c', 'b', 'A'] [1, 2]");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|dictsort }} {{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2]|sum }}"),
            "[['a', 2], ['b', 1]] [[1, 2], [3, 4], [5]] 3");
  EXPECT_EQ(render("{{ 'one two  three'|wordcount }} [{{ 'ab'|center(6) }}] {{ [3, 1, 2]|max }} {{ [3, 1, 2]|min }}"),
            "3 [  ab  ] 3 1");
  EXPECT_EQ(render("{{ 'x'|string }}{{ [1, 1, 2]|unique|list }}{{ 'abc'|first }}{{ 'abc'|last }}{{ ' a '|trim }}"),
            "x[1, 2]aca");
  EXPECT_EQ(render("{{ xs|selectattr('k', 'defined')|list|length }} {{ xs|rejectattr('k')|list|length }}",
                   {{"xs", {{{"k", 1}}, {{"j", 1}}, {{"k", 0}}}}}),
            "2 2");
  EXPECT_EQ(render("{{ 6 is divisibleby 3 }} {{ 5 is gt 3 }} {{ 'a' is lower }} {{ 'A' is upper }} {{ 1 is in [1] }} "
                   "{{ none is none }} {{ {} is mapping }} {{ [] is iterable }} {{ 'x' is sequence }} "
                   "{{ 1.0 is number }} {{ true is boolean }} {{ false is false }} {{ 3 is eq 3 }}"),
            "True True True True True True True True True True True True True");
}

TEST(ChatConstructs, GlobalsAndContext) {
  ChatTemplateOptions fixed;
  fixed.now = [] {
    std::tm t{};
    t.tm_year = 124;
    t.tm_mon = 6;
    t.tm_mday = 5;
    return t;
  };
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%B %-d') }}", ordered_json::object(), fixed),
            "05 Jul 2024|July 5");
  // Context variables override the globals, as the context does in transformers.
  EXPECT_EQ(render("{{ range }}", {{"range", "r"}}), "r");
  EXPECT_NE(render_error("{{ raise_exception('bad ' ~ 1) }}").find("raise_exception: bad 1"), std::string::npos);
  EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('z', 0) }} {{ d.keys()|list }} {{ d.values()|list }}"
                   "{% for k, v in d.items() %} {{ k }}={{ v }}{% endfor %}",
                   {{"d", {{"a", 1}}}}),
            "1 0 ['a'] [1] a=1");
  EXPECT_EQ(render("{{ [1, 2, 3, 4][::-1] }} {{ [1, 2, 3, 4][::2] }} {{ 'abcd'[-2:] }} {{ [1, 2, 3][1:] }}"),
            "[4, 3, 2, 1] [1, 3] cd [2, 3]");
}

TEST(ChatConstructs, StarArgumentsAndCallableValues) {
  EXPECT_EQ(render("{% macro m(a, b, c=3) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{% set args = [1, 2] %}"
                   "{{ m(*args) }} {{ m(*args, **{'c': 9}) }} {{ m(**{'b': 5, 'a': 4}) }}"),
            "123 129 453");
  EXPECT_EQ(render("{% set d = {'n': 1} %}{% set ns = namespace(**d) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}"), "2");
  // Macros stored in lists and mappings are called through them.
  EXPECT_EQ(render("{% macro a() %}A{% endmacro %}{% macro b(x) %}B{{ x }}{% endmacro %}{% set fs = [a, b] %}"
                   "{{ fs[0]() }}{{ fs[1](2) }}{% set m = {'f': b} %}{{ m.f(3) }}"),
            "AB2B3");
  // A key that only the interpreter writes (" call") read from the context is not a function.
  EXPECT_NE(render_error("{{ x() }}", {{"x", {{" call", 1}}}}).find("cannot be called"), std::string::npos);
  EXPECT_NE(render_error("{{ 'a'() }}").find("cannot be called"), std::string::npos);
  EXPECT_NE(render_error("{{ nosuch() }}").find("unknown function 'nosuch'"), std::string::npos);
  EXPECT_NE(render_error("{{ 'a' + none }}").find("unsupported operand types for '+': str and NoneType"),
            std::string::npos);
}

}  // namespace
}  // namespace hfstatic
