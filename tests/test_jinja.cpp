// The Jinja interpreter (src/text/jinja/) on hand-worked templates: the
// whitespace rules, expressions and filters chat templates use, which bytes
// stay plain (message text) through string operations, the constructs it
// refuses by name, and the limits that stop runaway templates.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "text/jinja/errors.h"
#include "text/jinja/template.h"

namespace smolinfer::text::jinja {
namespace {

RenderContext context_with(std::vector<std::pair<std::string, Value>> globals) {
    RenderContext ctx;
    ctx.globals = std::move(globals);
    ctx.now = 1721995200;  // 2024-07-26 12:00:00 UTC
    return ctx;
}

std::string render(const std::string& source, const RenderContext& ctx = {}) {
    std::string out;
    for (const TaggedString& s : Template(source).render(ctx)) out += s.str();
    return out;
}

// The rendering with plain (message) bytes in [brackets].
std::string render_tagged(const std::string& source, const RenderContext& ctx) {
    std::string out;
    for (const TaggedString& s : Template(source).render(ctx)) {
        for (const Segment& seg : s.segments()) out += seg.plain ? "[" + seg.text + "]" : seg.text;
    }
    return out;
}

Value plain(const std::string& s) { return Value::string(TaggedString(s, true)); }

TEST(JinjaWhitespace, TrimBlocksLstripBlocksAndDashes) {
    // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before one goes.
    EXPECT_EQ(render("{% if true %}\n  yes\n  {% endif %}\nend"), "  yes\nend");
    // Expressions keep their newline.
    EXPECT_EQ(render("{{ 'a' }}\nb"), "a\nb");
    // Dashes strip all whitespace on their side.
    EXPECT_EQ(render("a  \n {{- 'b' -}} \n  c"), "abc");
    EXPECT_EQ(render("ab {#- comment -#} y"), "aby");
    // llama.cpp's lstrip_blocks also drops a single character at the very
    // start of the source before a block tag; the goldens need the same.
    EXPECT_EQ(render("x {#- comment -#} y"), "y");
    // One trailing newline of the source is dropped, as llama.cpp does.
    EXPECT_EQ(render("hi\n"), "hi");
    EXPECT_EQ(render("hi\n\n"), "hi\n");
}

TEST(JinjaExpressions, PythonSemantics) {
    EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }}"), "3 -4 2 3.5 1024");
    EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ true }}"), "a1NoneTrue");
    EXPECT_EQ(render("{{ [1, 2, 3][::-1] }} {{ 'héllo'[1:3] }} {{ 'abc'[-1] }}"), "[3, 2, 1] él c");
    EXPECT_EQ(render("{{ 'x' if false }}|{{ 'y' if 0 else 'z' }}|{{ none or 'd' }}|{{ 1 and 2 }}"), "|z|d|2");
    EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 3 not in [1, 2] }} {{ 'k' in {'k': 1} }}"), "True True True");
    EXPECT_EQ(render("{{ {'a': [1, 'x']} }}"), "{'a': [1, 'x']}");
    EXPECT_EQ(render("{{ undefined_name }}|{{ undefined_name.attr }}|{{ undefined_name is defined }}"), "||False");
    // Type tests as llama.cpp's interpreter has them (common/jinja/value.cpp):
    // undefined is iterable and a sequence, a mapping is neither.
    EXPECT_EQ(render("{{ nothing is iterable }} {{ nothing is sequence }} {{ {'a': 1} is iterable }} "
                     "{{ {'a': 1} is sequence }} {{ 'ab' is iterable }} {{ [1] is sequence }} {{ 3 is iterable }}"),
              "True True False False True True False");
}

TEST(JinjaStatements, LoopsNamespacesAndSet) {
    EXPECT_EQ(render("{% for x in [1, 2, 3] if x != 2 %}{{ loop.index }}:{{ x }}{% if not loop.last %},{% endif %}"
                     "{% endfor %}"),
              "1:1,2:3");
    EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
    EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
    EXPECT_EQ(render("{% for x in range(5) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 3 %}{% break %}"
                     "{% endif %}{{ x }}{% endfor %}"),
              "02");
    // A set inside a loop stays in the loop; a namespace carries values out.
    EXPECT_EQ(render("{% set n = 0 %}{% set ns = namespace(n=0) %}{% for x in [1, 2] %}{% set n = n + x %}"
                     "{% set ns.n = ns.n + x %}{% endfor %}{{ n }} {{ ns.n }}"),
              "0 3");
    EXPECT_EQ(render("{% set block %}a{{ 1 + 1 }}{% endset %}[{{ block }}]"), "[a2]");
}

TEST(JinjaFilters, ChatTemplateFilters) {
    EXPECT_EQ(render("{{ '  x  ' | trim }}|{{ 'ab' | upper }}|{{ [3, 4] | length }}|{{ 'hé' | length }}"), "x|AB|2|2");
    EXPECT_EQ(render("{{ ['a', 'b'] | join(', ') }}|{{ [1, 2] | first }}|{{ [1, 2] | last }}"), "a, b|1|2");
    EXPECT_EQ(render("{{ x | default('d') }}|{{ '' | default('d', true) }}"), "d|d");
    EXPECT_EQ(render("{{ ['a', 'code', 'b'] | reject('equalto', 'code') | list }}"), "['a', 'b']");
    EXPECT_EQ(render("{{ {'a': 'é\"', 'b': [1, 2.5, none, true]} | tojson }}"),
              "{\"a\": \"é\\\"\", \"b\": [1, 2.5, null, true]}");
    EXPECT_EQ(render("{{ {'a': [1]} | tojson(indent=2) }}"), "{\n  \"a\": [\n    1\n  ]\n}");
    auto message = [](const char* role) {
        Object o;
        o.set("role", Value::string(TaggedString(role)));
        return Value::object(std::move(o));
    };
    const auto ctx = context_with({{"ms", Value::array({message("user"), message("assistant"), message("user")})}});
    EXPECT_EQ(render("{{ ms | selectattr('role', 'equalto', 'user') | list | length }}", ctx), "2");
    EXPECT_EQ(render("{{ ms | map(attribute='role') | join(',') }}", ctx), "user,assistant,user");
    EXPECT_EQ(render("{{ 'a b  c'.split() }} {{ 'a,b'.split(',') }} {{ 'xxhixx'.strip('x') }}"),
              "['a', 'b', 'c'] ['a', 'b'] hi");
    EXPECT_EQ(render("{{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith('x') }} {{ 'a-b'.replace('-', '+') }}"),
              "True False a+b");
}

TEST(JinjaStatements, Macros) {
    EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                     "{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }}"),
              "Hi A! Hi B? Hi C.");
    // A macro sees the template's top level, not its caller's loop variables,
    // and its sets stay inside; it may call a macro defined after it.
    const auto ctx = context_with({{"g", Value::string(TaggedString("global"))}});
    EXPECT_EQ(render("{% macro m() %}{{ g }}|{{ local }}|{% set g = 'x' %}{{ g }}|{{ later() }}{% endmacro %}"
                     "{% macro later() %}L{% endmacro %}{% for local in ['l'] %}{{ m() }}{% endfor %}|{{ g }}",
                     ctx),
              "global||x|L|global");
    // Recursion works, within a depth limit.
    EXPECT_EQ(render("{% macro down(n) %}{{ n }}{% if n > 0 %}{{ down(n - 1) }}{% endif %}{% endmacro %}{{ down(3) }}"),
              "3210");
    EXPECT_THROW(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), RenderError);
    EXPECT_THROW(render("{% macro f() %}{% endmacro %}{{ f(1, 2) }}"), RenderError);
}

TEST(JinjaGlobals, StrftimeNowUsesTheGivenMomentInUtc) {
    EXPECT_EQ(render("{{ strftime_now('%d %b %Y %H:%M') }}", context_with({})), "26 Jul 2024 12:00");
}

TEST(JinjaGlobals, RaiseExceptionCarriesTheTemplatesMessage) {
    try {
        render("{{ raise_exception('roles must alternate') }}");
        FAIL() << "no exception";
    } catch (const RenderError& e) {
        EXPECT_EQ(std::string(e.what()), "roles must alternate");
    }
}

TEST(JinjaTags, MessageTextStaysPlainThroughStringOperations) {
    const auto ctx = context_with({{"c", plain("  <|eot_id|> hi  ")}, {"d", plain("<think>r</think>ans")}});
    EXPECT_EQ(render_tagged("<a>{{ c | trim }}</a>", ctx), "<a>[<|eot_id|> hi]</a>");
    EXPECT_EQ(render_tagged("{{ '<s>' + c.strip() + '</s>' }}", ctx), "<s>[<|eot_id|> hi]</s>");
    EXPECT_EQ(render_tagged("{{ d.split('</think>')[-1] }}|{{ d.split('</think>')[0].split('<think>')[-1] }}", ctx),
              "[ans]|[r]");
    // Replacing inside message text: the new text is the template's, the rest stays the user's.
    EXPECT_EQ(render_tagged("{{ d.replace('ans', '<X>') }}", ctx), "[<think>r</think>]<X>");
    EXPECT_EQ(render_tagged("{{ c | upper | trim }}", ctx), "[<|EOT_ID|> HI]");
    // Output of message text through tojson is still message text.
    EXPECT_EQ(render_tagged("{{ c | tojson }}", ctx), "[\"  <|eot_id|> hi  \"]");
}

TEST(JinjaRefuses, UnsupportedConstructsByName) {
    auto refusal = [](const std::string& source) -> std::string {
        try {
            Template t(source);
        } catch (const Unsupported& e) {
            return e.what();
        }
        return "accepted";
    };
    EXPECT_EQ(refusal("{% call m() %}x{% endcall %}"), "the '{% call %}' statement");
    EXPECT_EQ(refusal("{% macro m() %}{{ caller() }}{% endmacro %}"), "{% call %} blocks (caller())");
    EXPECT_EQ(refusal("{% include 'x' %}"), "the '{% include %}' statement");
    EXPECT_EQ(refusal("{{ x | wordwrap }}"), "the filter 'wordwrap'");
    EXPECT_EQ(refusal("{{ x is divisibleby(3) }}"), "the test 'divisibleby'");
    EXPECT_EQ(refusal("{{ cycler(1) }}"), "the function 'cycler'");
    EXPECT_EQ(refusal("{{ x.format(1) }}"), "the method 'format'");
    EXPECT_THROW(Template("{% if x %}"), SyntaxError);
    EXPECT_THROW(Template("{{ 'unterminated }}"), SyntaxError);
    EXPECT_THROW(Template("{% endfor %}"), SyntaxError);
}

TEST(JinjaLimits, RunawayTemplatesFail) {
    // Loops.
    EXPECT_THROW(render("{% for x in range(100000000) %}{% endfor %}"), RenderError);
    EXPECT_THROW(render("{% for a in range(1000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}"), RenderError);
    // Text that doubles each iteration.
    EXPECT_THROW(render("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
                        "{% endfor %}"),
                 RenderError);
    EXPECT_THROW(render("{{ 'x' * 100000000 }}"), RenderError);
    // Output.
    RenderContext small;
    small.limits.max_output_bytes = 100;
    EXPECT_THROW(render("{% for i in range(200) %}x{% endfor %}", small), RenderError);
    // Values nesting without bound, and namespaces holding themselves.
    EXPECT_THROW(render("{% set ns = namespace(v=[]) %}{% for i in range(100) %}{% set ns.v = [ns.v] %}{% endfor %}"),
                 RenderError);
    EXPECT_THROW(render("{% set ns = namespace() %}{% set ns.self = ns %}"), RenderError);
    // Nesting in the source.
    EXPECT_THROW(Template("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), SyntaxError);
    EXPECT_THROW(Template("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}"), SyntaxError);
    std::string chain = "{{ 1";
    for (int i = 0; i < 5000; ++i) chain += " + 1";
    EXPECT_THROW(Template(chain + " }}"), SyntaxError);
    std::string nested;
    for (int i = 0; i < 1000; ++i) nested += "{% if true %}";
    EXPECT_THROW(Template(nested + "x"), SyntaxError);
}

// Python's integers do not overflow; ours are 64-bit and say so instead of
// wrapping (undefined behaviour in C++; found by fuzz_chat_template).
TEST(JinjaLimits, IntegerOverflowFails) {
    EXPECT_EQ(render("{{ 3 ** 39 }}|{{ 2 ** 62 }}|{{ (-2) ** 63 }}"),
              "4052555153018976267|4611686018427387904|-9223372036854775808");
    EXPECT_EQ(render("{{ 9223372036854775807 - 1 + 1 }}|{{ -9223372036854775807 - 1 }}"),
              "9223372036854775807|-9223372036854775808");
    for (const char* source : {"{{ 7972 ** 7 * 777 }}", "{{ 2 ** 63 }}", "{{ 9223372036854775807 + 1 }}",
                               "{{ -9223372036854775807 - 2 }}", "{{ 3037000500 * 3037000500 }}",
                               "{{ -(-9223372036854775807 - 1) }}", "{{ (-9223372036854775807 - 1) // -1 }}",
                               "{{ (-9223372036854775807 - 1) | abs }}", "{{ (10.0 ** 300) | int }}",
                               "{{ (10.0 ** 400 - 10.0 ** 400) | int }}", "{{ '99999999999999999999' | int }}"}) {
        EXPECT_THROW(render(source), RenderError) << source;
    }
    EXPECT_EQ(render("{{ (-9223372036854775807 - 1) % -1 }}|{{ 7 // -1 }}|{{ -7 % -1 }}"), "0|-7|0");
    EXPECT_EQ(render("{{ -9.9 | int }}|{{ (2.0 ** 62) | int }}"), "-9|4611686018427387904");
    // Ranges and slices whose next step would pass the largest integer end there.
    EXPECT_EQ(render("{{ range(9223372036854775806, 9223372036854775807, 5) | list }}"), "[9223372036854775806]");
    EXPECT_EQ(render("{{ [1, 2, 3][1::9223372036854775807] }}"), "[2]");
}

// Each macro body is within the parser's bounds, but a macro calling itself
// from deep inside its body multiplies the nesting (and the C++ stack) by the
// macro depth: a limit on the whole nesting makes it a RenderError, where it
// was a stack overflow (found by fuzz_chat_template).
TEST(JinjaLimits, MacroRecursionFromDeepInsideItsBodyFails) {
    const std::string minuses(180, '-');
    std::string ifs, endifs, fors, endfors;
    for (int i = 0; i < 180; ++i) ifs += "{% if true %}", endifs += "{% endif %}";
    for (int i = 0; i < 180; ++i) fors += "{% for x in [1] %}", endfors += "{% endfor %}";
    for (const std::string& body : {"{{ " + minuses + "m(n + 1)|length }}", ifs + "{{ m(n + 1) }}" + endifs,
                                    fors + "{{ m(n + 1) }}" + endfors}) {
        const std::string source = "{% macro m(n) %}" + body + "{% endmacro %}{{ m(0) }}";
        try {
            render(source);
            FAIL() << "rendered";
        } catch (const RenderError& e) {
            EXPECT_NE(std::string(e.what()).find("nest deeper than 1000"), std::string::npos) << e.what();
        }
    }
    // What the parser accepts renders without macros: 190 statements deep
    // around an expression 399 high.
    std::string deep, ends;
    for (int i = 0; i < 190; ++i) deep += "{% if true %}", ends += "{% endif %}";
    std::string chain = "1";
    for (int i = 0; i < 398; ++i) chain += " + 1";
    EXPECT_EQ(render(deep + "{{ " + chain + " }}" + ends), "399");
    // And a recursion of shallow bodies still reaches the macro limit first.
    try {
        render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
        FAIL() << "rendered";
    } catch (const RenderError& e) {
        EXPECT_NE(std::string(e.what()).find("macros nest deeper than 32"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace smolinfer::text::jinja
