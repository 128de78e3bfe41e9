#include "text/jinja/evaluator.h"

#include <cmath>
#include <map>

#include "text/jinja/builtins.h"
#include "text/jinja/checked_int.h"
#include "text/jinja/errors.h"
#include "text/jinja/string_ops.h"

namespace smolinfer::text::jinja {

namespace {

enum class Flow { Normal, Break, Continue };

// Python's slice bounds for a sequence of n items.
std::vector<size_t> slice_indices(int64_t n, const Value& start_v, const Value& stop_v, const Value& step_v) {
    auto get = [](const Value& v, int64_t dflt) {
        if (v.is_undefined() || v.is_none()) return dflt;
        if (v.kind != Value::Kind::Int) type_error("slice bounds must be integers", v);
        return v.i;
    };
    const int64_t step = get(step_v, 1);
    if (step == 0) throw RenderError("slice step cannot be zero");
    auto clamp = [&](int64_t x, int64_t lo, int64_t hi) {
        if (x < 0) x += n;
        return x < lo ? lo : (x > hi ? hi : x);
    };
    std::vector<size_t> out;
    if (step > 0) {
        const int64_t start = clamp(get(start_v, 0), 0, n), stop = clamp(get(stop_v, n), 0, n);
        for (int64_t k = start; k < stop;) {
            out.push_back(size_t(k));
            if (__builtin_add_overflow(k, step, &k)) break;  // past stop too
        }
    } else {
        const int64_t start = start_v.is_undefined() || start_v.is_none() ? n - 1 : clamp(get(start_v, 0), -1, n - 1);
        const int64_t stop = stop_v.is_undefined() || stop_v.is_none() ? -1 : clamp(get(stop_v, 0), -1, n - 1);
        for (int64_t k = start; k > stop; k += step) out.push_back(size_t(k));
    }
    return out;
}

bool holds_namespace(const Value& v) {
    if (v.is_object()) {
        if (v.o->is_namespace) return true;
        for (const auto& kv : v.o->items) {
            if (holds_namespace(kv.second)) return true;
        }
    }
    if (v.is_array()) {
        for (const Value& item : *v.a) {
            if (holds_namespace(item)) return true;
        }
    }
    return false;
}

class Evaluator {
public:
    explicit Evaluator(const RenderContext& ctx) : ctx_(ctx) {
        frames_.emplace_back();
        for (const auto& kv : ctx.globals) frames_.back()[kv.first] = kv.second;
    }

    std::vector<TaggedString> run(const Body& program) {
        std::vector<TaggedString> out;
        out_ = &out;
        if (exec(program) != Flow::Normal) throw RenderError("{% break %} or {% continue %} outside a loop");
        return out;
    }

private:
    using Frame = std::map<std::string, Value>;

    void step() {
        if (++steps_ > ctx_.limits.max_steps) {
            throw RenderError("the template ran more than " + std::to_string(ctx_.limits.max_steps) + " steps");
        }
    }

    // Held while a statement runs or an expression is evaluated. A for loop
    // weighs 2: its frame holds the items and the loop object, and in the
    // wasm build 1 MB of stack held about 750 nested loops but more than
    // 1000 of anything else.
    struct Nesting {
        Nesting(Evaluator& e, int weight) : e_(e), weight_(weight) {
            e_.depth_ += weight_;
            if (e_.depth_ > e_.ctx_.limits.max_depth) {
                e_.depth_ -= weight_;
                throw RenderError("statements and expressions nest deeper than " +
                                  std::to_string(e_.ctx_.limits.max_depth) + " (through macro calls)");
            }
        }
        ~Nesting() { e_.depth_ -= weight_; }
        Nesting(const Nesting&) = delete;
        Nesting& operator=(const Nesting&) = delete;
        Evaluator& e_;
        int weight_;
    };

    void emit(TaggedString s) {
        output_bytes_ += s.size();
        if (output_bytes_ > ctx_.limits.max_output_bytes) {
            throw RenderError("the template's output exceeds " + std::to_string(ctx_.limits.max_output_bytes) + " bytes");
        }
        out_->push_back(std::move(s));
    }

    Value lookup(const std::string& name) const {
        for (auto f = frames_.rbegin(); f != frames_.rend(); ++f) {
            const auto it = f->find(name);
            if (it != f->end()) return it->second;
        }
        return Value();
    }

    // ------------------------------------------------------------ statements

    Flow exec(const Body& body) {
        for (const StmtPtr& s : body) {
            const Flow f = exec(*s);
            if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
    }

    Flow exec(const Stmt& s) {
        const Nesting nesting(*this, s.kind == Stmt::Kind::For ? 2 : 1);
        step();
        switch (s.kind) {
            case Stmt::Kind::Text: emit(TaggedString(s.text)); return Flow::Normal;
            case Stmt::Kind::Output: emit(to_text(eval(*s.expr))); return Flow::Normal;
            case Stmt::Kind::If:
                for (const auto& [cond, body] : s.branches) {
                    if (!cond || truthy(eval(*cond))) return exec(body);
                }
                return Flow::Normal;
            case Stmt::Kind::For: return exec_for(s);
            case Stmt::Kind::Set: exec_set(s); return Flow::Normal;
            case Stmt::Kind::Macro: macros_[s.text] = &s; return Flow::Normal;
            case Stmt::Kind::Break: return Flow::Break;
            case Stmt::Kind::Continue: return Flow::Continue;
        }
        return Flow::Normal;
    }

    // The body's output as one string.
    TaggedString capture(const Body& body, const char* where) {
        std::vector<TaggedString> captured;
        std::vector<TaggedString>* saved = out_;
        out_ = &captured;
        Flow f;
        try {
            f = exec(body);
        } catch (...) {
            out_ = saved;
            throw;
        }
        out_ = saved;
        if (f != Flow::Normal) throw RenderError(std::string("{% break %} or {% continue %} inside ") + where);
        TaggedString joined;
        for (const TaggedString& t : captured) joined.append(t);
        return joined;
    }

    Value call_macro(const Stmt& m, const Args& args, const Kwargs& kwargs) {
        if (macro_depth_ >= ctx_.limits.max_macro_depth) {
            throw RenderError("macros nest deeper than " + std::to_string(ctx_.limits.max_macro_depth));
        }
        if (args.size() > m.targets.size()) {
            throw RenderError("macro " + m.text + " takes " + std::to_string(m.targets.size()) + " arguments, got " +
                              std::to_string(args.size()));
        }
        // A macro sees the template's globals and its parameters, not its caller's variables.
        std::vector<Frame> saved = std::move(frames_);
        frames_ = {saved.front(), Frame{}};
        ++macro_depth_;
        try {
            for (size_t k = 0; k < m.targets.size(); ++k) {
                const Value* kw = kwarg(kwargs, m.targets[k].c_str());
                frames_.back()[m.targets[k]] = k < args.size() ? args[k]
                                               : kw            ? *kw
                                               : m.defaults[k] ? eval(*m.defaults[k])
                                                               : Value();
            }
            const TaggedString out = capture(m.body, "a macro");
            --macro_depth_;
            frames_ = std::move(saved);
            return Value::string(out);
        } catch (...) {
            --macro_depth_;
            frames_ = std::move(saved);
            throw;
        }
    }

    void exec_set(const Stmt& s) {
        const Value v = s.expr ? eval(*s.expr) : Value::string(capture(s.body, "{% set %}"));
        // Only {% set %} keeps values across loop iterations: bounding what it
        // stores bounds every value (and the recursion that prints or compares it).
        if (v.nest > ctx_.limits.max_nest) {
            throw RenderError("{% set " + s.targets[0] + " %}: lists and dicts nest deeper than " +
                              std::to_string(ctx_.limits.max_nest));
        }
        if (s.attr.empty()) {
            frames_.back()[s.targets[0]] = v;
            return;
        }
        const Value target = lookup(s.targets[0]);
        if (!target.is_object() || !target.o->is_namespace) {
            throw RenderError("{% set " + s.targets[0] + "." + s.attr + " %}: '" + s.targets[0] + "' is not a namespace");
        }
        // Namespaces are the only mutable values; keeping them out of each
        // other rules out reference cycles.
        if (holds_namespace(v)) {
            throw RenderError("{% set " + s.targets[0] + "." + s.attr + " %}: a namespace cannot hold a namespace");
        }
        target.o->set(s.attr, v);
    }

    Flow exec_for(const Stmt& s) {
        const Value seq = eval(*s.expr);
        Array items;
        if (seq.is_array()) {
            items = *seq.a;
        } else if (seq.is_object()) {
            for (const auto& kv : seq.o->items) items.push_back(Value::string(TaggedString(kv.first)));
        } else if (seq.is_string()) {
            items = apply_filter("list", seq, {}, {}).a ? *apply_filter("list", seq, {}, {}).a : Array{};
        } else if (!seq.is_undefined() && !seq.is_none()) {
            type_error("a for loop needs a list, dict or string", seq);
        }
        frames_.emplace_back();
        auto bind = [&](const Value& item) {
            Frame& f = frames_.back();
            if (s.targets.size() == 1) {
                f[s.targets[0]] = item;
                return;
            }
            if (!item.is_array() || item.a->size() != s.targets.size()) {
                throw RenderError("cannot unpack a " + std::string(kind_name(item.kind)) + " into " +
                                  std::to_string(s.targets.size()) + " loop variables");
            }
            for (size_t k = 0; k < s.targets.size(); ++k) f[s.targets[k]] = (*item.a)[k];
        };
        if (s.cond) {
            Array kept;
            for (const Value& item : items) {
                step();
                bind(item);
                if (truthy(eval(*s.cond))) kept.push_back(item);
            }
            items = std::move(kept);
        }
        const int64_t n = int64_t(items.size());
        for (int64_t k = 0; k < n; ++k) {
            step();
            frames_.back().clear();
            bind(items[size_t(k)]);
            Object loop;
            loop.set("index", Value::integer(k + 1));
            loop.set("index0", Value::integer(k));
            loop.set("revindex", Value::integer(n - k));
            loop.set("revindex0", Value::integer(n - k - 1));
            loop.set("first", Value::boolean(k == 0));
            loop.set("last", Value::boolean(k == n - 1));
            loop.set("length", Value::integer(n));
            loop.set("previtem", k > 0 ? items[size_t(k - 1)] : Value());
            loop.set("nextitem", k + 1 < n ? items[size_t(k + 1)] : Value());
            frames_.back()["loop"] = Value::object(std::move(loop));
            const Flow f = exec(s.body);
            if (f == Flow::Break) break;
        }
        frames_.pop_back();
        if (n == 0) {
            const Flow f = exec(s.else_body);
            if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
    }

    // ----------------------------------------------------------- expressions

    void eval_args(const Expr& e, size_t first, Args& args, Kwargs& kwargs) {
        for (size_t k = first; k < e.args.size(); ++k) args.push_back(eval(*e.args[k]));
        for (const auto& [key, x] : e.kwargs) kwargs.emplace_back(key, eval(*x));
    }

    Value eval(const Expr& e) {
        const Nesting nesting(*this, 1);
        switch (e.kind) {
            case Expr::Kind::Literal: return e.literal;
            case Expr::Kind::Name: {
                Value v = lookup(e.name);
                if (v.is_undefined() && is_global_function(e.name)) return Value::function(e.name);
                return v;
            }
            case Expr::Kind::List: {
                Array items;
                for (const ExprPtr& x : e.args) items.push_back(eval(*x));
                return Value::array(std::move(items));
            }
            case Expr::Kind::Dict: {
                Object o;
                for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
                    const Value key = eval(*e.args[k]);
                    o.set(need_string(key, "a dict key").str(), eval(*e.args[k + 1]));
                }
                return Value::object(std::move(o));
            }
            case Expr::Kind::Member: return member(eval(*e.args[0]), e.name);
            case Expr::Kind::Index: return index(eval(*e.args[0]), eval(*e.args[1]));
            case Expr::Kind::Slice: return slice(e);
            case Expr::Kind::Call: return call(e);
            case Expr::Kind::Filter: {
                const Value subject = eval(*e.args[0]);
                Args args;
                Kwargs kwargs;
                eval_args(e, 1, args, kwargs);
                return apply_filter(e.name, subject, args, kwargs);
            }
            case Expr::Kind::Test: {
                const Value subject = eval(*e.args[0]);
                Args args;
                Kwargs kwargs;
                eval_args(e, 1, args, kwargs);
                return Value::boolean(apply_test(e.name, subject, args) != e.negated);
            }
            case Expr::Kind::Unary: {
                const Value x = eval(*e.args[0]);
                if (e.name == "not") return Value::boolean(!truthy(x));
                if (x.kind == Value::Kind::Int) return Value::integer(e.name == "-" ? checked_neg(x.i) : x.i);
                if (x.kind == Value::Kind::Float) return Value::number(e.name == "-" ? -x.f : x.f);
                type_error("unary " + e.name + " needs a number", x);
            }
            case Expr::Kind::Binary: return binary(e);
            case Expr::Kind::Ternary:
                if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
                return e.args[2] ? eval(*e.args[2]) : Value();
        }
        return Value();
    }

    static Value member(const Value& obj, const std::string& name) {
        if (obj.is_object()) {
            const Value* v = obj.o->find(name);
            return v ? *v : Value();
        }
        return Value();
    }

    static Value index(const Value& obj, const Value& key) {
        if (obj.is_object()) {
            if (!key.is_string()) return Value();
            return member(obj, key.s.str());
        }
        if (obj.is_array() || obj.is_string()) {
            if (key.kind != Value::Kind::Int) type_error("a list index must be an integer", key);
            const std::string text = obj.is_string() ? obj.s.str() : std::string();
            const int64_t n = obj.is_array() ? int64_t(obj.a->size()) : int64_t(codepoint_count(text));
            const int64_t k = key.i < 0 ? key.i + n : key.i;
            if (k < 0 || k >= n) return Value();
            if (obj.is_array()) return (*obj.a)[size_t(k)];
            return Value::string(obj.s.substr(codepoint_offset(text, size_t(k)), codepoint_offset(text, size_t(k + 1))));
        }
        return Value();
    }

    Value slice(const Expr& e) {
        const Value obj = eval(*e.args[0]);
        auto part = [&](size_t k) { return e.args[k] ? eval(*e.args[k]) : Value(); };
        const Value start = part(1), stop = part(2), stride = part(3);
        if (obj.is_array()) {
            Array out;
            for (const size_t k : slice_indices(int64_t(obj.a->size()), start, stop, stride)) out.push_back((*obj.a)[k]);
            return Value::array(std::move(out));
        }
        if (obj.is_string()) {
            const std::string text = obj.s.str();
            TaggedString out;
            for (const size_t k : slice_indices(int64_t(codepoint_count(text)), start, stop, stride)) {
                out.append(obj.s.substr(codepoint_offset(text, k), codepoint_offset(text, k + 1)));
            }
            return Value::string(out);
        }
        type_error("only lists and strings can be sliced", obj);
    }

    Value call(const Expr& e) {
        const Expr& callee = *e.args[0];
        Args args;
        Kwargs kwargs;
        if (callee.kind == Expr::Kind::Member) {
            const Value receiver = eval(*callee.args[0]);
            eval_args(e, 1, args, kwargs);
            return call_method(receiver, callee.name, args, kwargs);
        }
        eval_args(e, 1, args, kwargs);
        return call_global(callee.name, args, kwargs);
    }

    Value call_global(const std::string& name, const Args& args, const Kwargs& kwargs) {
        if (!is_global_function(name)) {
            const auto m = macros_.find(name);
            if (m == macros_.end()) throw RenderError("the macro '" + name + "' is not defined here");
            return call_macro(*m->second, args, kwargs);
        }
        if (name == "raise_exception") {
            throw RenderError(args.empty() ? "raise_exception()" : to_text(args[0]).str());
        }
        if (name == "namespace" || name == "dict") {
            Object o;
            o.is_namespace = name == "namespace";
            for (const auto& [key, v] : kwargs) o.set(key, v);
            return Value::object(std::move(o));
        }
        if (name == "range") {
            int64_t start = 0, stop = 0, stride = 1;
            for (const Value& a : args) {
                if (a.kind != Value::Kind::Int) type_error("range() needs integers", a);
            }
            if (args.size() == 1) stop = args[0].i;
            else if (args.size() >= 2) start = args[0].i, stop = args[1].i;
            if (args.size() >= 3) stride = args[2].i;
            if (args.empty() || args.size() > 3 || stride == 0) throw RenderError("range() needs 1 to 3 integers, step not 0");
            Array out;
            for (int64_t k = start; stride > 0 ? k < stop : k > stop;) {
                step();
                out.push_back(Value::integer(k));
                if (__builtin_add_overflow(k, stride, &k)) break;  // past stop too
            }
            return Value::array(std::move(out));
        }
        if (name == "strftime_now") {
            if (args.empty()) throw RenderError("strftime_now() needs a format");
            const std::string format = need_string(args[0], "strftime_now's format").str();
            std::tm tm{};
            const std::time_t now = ctx_.now;
#if defined(_WIN32)
            gmtime_s(&tm, &now);
#else
            gmtime_r(&now, &tm);
#endif
            char buf[256];
            const size_t n = std::strftime(buf, sizeof buf, format.c_str(), &tm);
            if (n == 0 && !format.empty()) throw RenderError("strftime_now: cannot format '" + format + "'");
            return Value::string(TaggedString(std::string(buf, n)));
        }
        throw RenderError("unknown function '" + name + "'");
    }

    static int compare(const Value& l, const Value& r, const std::string& op) {
        if (l.is_number() && r.is_number()) return l.as_double() < r.as_double() ? -1 : (l.as_double() > r.as_double() ? 1 : 0);
        if (l.is_string() && r.is_string()) return l.s.str().compare(r.s.str());
        throw RenderError("cannot compare " + std::string(kind_name(l.kind)) + " " + op + " " + kind_name(r.kind));
    }

    Value arithmetic(const std::string& op, const Value& l, const Value& r) {
        if (op == "+") {
            if (l.is_string() && r.is_string()) {
                check_string_size(l.s.size() + r.s.size());
                TaggedString s = l.s;
                s.append(r.s);
                return Value::string(s);
            }
            if (l.is_array() && r.is_array()) {
                if (l.a->size() + r.a->size() > ctx_.limits.max_steps) throw RenderError("a list grew too long");
                Array a = *l.a;
                a.insert(a.end(), r.a->begin(), r.a->end());
                return Value::array(std::move(a));
            }
        }
        if (op == "*" && l.is_string() && r.kind == Value::Kind::Int) {
            TaggedString s;
            for (int64_t k = 0; k < r.i; ++k) {
                step();
                check_string_size(s.size() + l.s.size());
                s.append(l.s);
            }
            return Value::string(s);
        }
        if (!l.is_number() || !r.is_number()) {
            throw RenderError("cannot apply " + op + " to " + kind_name(l.kind) + " and " + kind_name(r.kind));
        }
        const bool ints = l.kind == Value::Kind::Int && r.kind == Value::Kind::Int;
        if (op == "+") return ints ? Value::integer(checked_add(l.i, r.i)) : Value::number(l.as_double() + r.as_double());
        if (op == "-") return ints ? Value::integer(checked_sub(l.i, r.i)) : Value::number(l.as_double() - r.as_double());
        if (op == "*") return ints ? Value::integer(checked_mul(l.i, r.i)) : Value::number(l.as_double() * r.as_double());
        if (op == "/") {
            if (r.as_double() == 0) throw RenderError("division by zero");
            return Value::number(l.as_double() / r.as_double());
        }
        if (op == "//" || op == "%") {
            if (r.as_double() == 0) throw RenderError("division by zero");
            if (ints) {
                // Python: x // -1 is -x (too big for INT64_MIN), x % -1 is 0; C++'s / and % of INT64_MIN by -1 trap.
                if (r.i == -1) return Value::integer(op == "//" ? checked_neg(l.i) : 0);
                int64_t q = l.i / r.i, m = l.i % r.i;
                if (m != 0 && ((m < 0) != (r.i < 0))) {
                    --q;
                    m += r.i;
                }
                return Value::integer(op == "//" ? q : m);
            }
            const double q = std::floor(l.as_double() / r.as_double());
            return Value::number(op == "//" ? q : l.as_double() - q * r.as_double());
        }
        if (op == "**") return ints && r.i >= 0 ? Value::integer(checked_pow(l.i, r.i))
                                               : Value::number(std::pow(l.as_double(), r.as_double()));
        throw RenderError("unknown operator " + op);
    }

    Value binary(const Expr& e) {
        const std::string& op = e.name;
        const Value l = eval(*e.args[0]);
        if (op == "and") return truthy(l) ? eval(*e.args[1]) : l;
        if (op == "or") return truthy(l) ? l : eval(*e.args[1]);
        const Value r = eval(*e.args[1]);
        if (op == "==") return Value::boolean(equal(l, r));
        if (op == "!=") return Value::boolean(!equal(l, r));
        if (op == "<") return Value::boolean(compare(l, r, op) < 0);
        if (op == ">") return Value::boolean(compare(l, r, op) > 0);
        if (op == "<=") return Value::boolean(compare(l, r, op) <= 0);
        if (op == ">=") return Value::boolean(compare(l, r, op) >= 0);
        if (op == "in") return Value::boolean(apply_test("in", l, {r}));
        if (op == "not in") return Value::boolean(!apply_test("in", l, {r}));
        if (op == "~") {
            TaggedString s = to_text(l);
            const TaggedString rs = to_text(r);
            check_string_size(s.size() + rs.size());
            s.append(rs);
            return Value::string(s);
        }
        return arithmetic(op, l, r);
    }

    const RenderContext& ctx_;
    std::vector<Frame> frames_;
    std::vector<TaggedString>* out_ = nullptr;
    size_t steps_ = 0;
    size_t output_bytes_ = 0;
    std::map<std::string, const Stmt*> macros_;  // defined so far
    int macro_depth_ = 0;
    int depth_ = 0;  // the weight of the Nesting guards alive
};

}  // namespace

bool is_global_function(const std::string& name) {
    return name == "raise_exception" || name == "namespace" || name == "dict" || name == "range" ||
           name == "strftime_now";
}

std::vector<TaggedString> evaluate(const Body& program, const RenderContext& context) {
    return Evaluator(context).run(program);
}

}  // namespace smolinfer::text::jinja
