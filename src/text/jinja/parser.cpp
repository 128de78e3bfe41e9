#include "text/jinja/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <string>

#include "text/jinja/builtins.h"
#include "text/jinja/errors.h"

namespace smolinfer::text::jinja {

namespace {

// Deep nesting is refused rather than overflowing the stack.
constexpr int kMaxDepth = 200;
constexpr int kMaxHeight = 400;  // of an expression tree (left-deep chains like a+b+c+... too)

class Parser {
public:
    explicit Parser(const std::vector<Token>& t) : t_(t) {}

    Body run() {
        std::string end_tag;
        Body body = block({}, end_tag);
        // Calls may precede their macro's definition in the text.
        for (const std::string& name : called_) {
            if (!macros_.count(name)) throw Unsupported("the function '" + name + "'");
        }
        return body;
    }

private:
    using T = Token::Type;

    const Token& peek(size_t ahead = 0) const { return t_[std::min(p_ + ahead, t_.size() - 1)]; }
    const Token& next() {
        const Token& tok = peek();
        if (p_ < t_.size() - 1) ++p_;
        return tok;
    }
    bool is_op(const char* op, size_t ahead = 0) const { return peek(ahead).type == T::Op && peek(ahead).text == op; }
    bool is_name(const char* n, size_t ahead = 0) const { return peek(ahead).type == T::Name && peek(ahead).text == n; }
    [[noreturn]] void fail(const std::string& what) const {
        throw SyntaxError("template syntax: " + what + " at offset " + std::to_string(peek().offset));
    }
    void expect_op(const char* op) {
        if (!is_op(op)) fail(std::string("expected '") + op + "'");
        next();
    }
    void expect(T type, const char* what) {
        if (peek().type != type) fail(std::string("expected ") + what);
        next();
    }
    std::string name() {
        if (peek().type != T::Name) fail("expected a name");
        return next().text;
    }

    struct Guard {
        explicit Guard(Parser& p) : p_(p) {
            if (++p_.depth_ > kMaxDepth) p_.fail("nesting deeper than " + std::to_string(kMaxDepth));
        }
        ~Guard() { --p_.depth_; }
        Parser& p_;
    };

    // ------------------------------------------------------------ statements

    // Statements until one of the tags in `ends` ({% name ...), whose name
    // is returned in end_tag (the tag's tokens after its name are left).
    Body block(const std::set<std::string>& ends, std::string& end_tag) {
        Guard g(*this);
        Body body;
        while (true) {
            const Token& tok = peek();
            if (tok.type == T::End) {
                if (!ends.empty()) {
                    // The block's own end tag ({% endfor %}), not an {% else %} it may also take.
                    auto closing = std::find_if(ends.begin(), ends.end(), [](const std::string& e) { return e.starts_with("end"); });
                    fail("missing {% " + (closing != ends.end() ? *closing : *ends.begin()) + " %}");
                }
                return body;
            }
            if (tok.type == T::Text) {
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::Text;
                s->offset = tok.offset;
                s->text = next().text;
                body.push_back(std::move(s));
                continue;
            }
            if (tok.type == T::OpenExpr) {
                next();
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::Output;
                s->offset = tok.offset;
                s->expr = expression();
                expect(T::CloseExpr, "'}}'");
                body.push_back(std::move(s));
                continue;
            }
            if (tok.type != T::OpenStmt) fail("unexpected token");
            if (peek(1).type == T::Name && ends.count(peek(1).text)) {
                next();
                end_tag = next().text;
                return body;
            }
            next();
            body.push_back(statement());
        }
    }

    StmtPtr statement() {
        const size_t at = peek().offset;
        const std::string tag = name();
        StmtPtr s;
        if (tag == "if") {
            s = if_statement();
        } else if (tag == "for") {
            s = for_statement();
        } else if (tag == "set") {
            s = set_statement();
        } else if (tag == "macro") {
            s = macro_statement();
        } else if (tag == "break" || tag == "continue") {
            s = std::make_unique<Stmt>();
            s->kind = tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
            expect(T::CloseStmt, "'%}'");
        } else if (tag == "generation") {
            // A marker some templates put around assistant text; renders its body.
            expect(T::CloseStmt, "'%}'");
            std::string end;
            s = std::make_unique<Stmt>();
            s->kind = Stmt::Kind::If;
            auto cond = std::make_unique<Expr>();
            cond->kind = Expr::Kind::Literal;
            cond->literal = Value::boolean(true);
            s->branches.emplace_back(std::move(cond), block({"endgeneration"}, end));
            expect(T::CloseStmt, "'%}'");
        } else if (tag == "elif" || tag == "else" || tag.rfind("end", 0) == 0) {
            fail("unexpected {% " + tag + " %}");
        } else {
            throw Unsupported("the '{% " + tag + " %}' statement");
        }
        s->offset = at;
        return s;
    }

    StmtPtr if_statement() {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::If;
        ExprPtr cond = expression();
        while (true) {
            expect(T::CloseStmt, "'%}'");
            std::string end;
            Body body = block({"elif", "else", "endif"}, end);
            s->branches.emplace_back(std::move(cond), std::move(body));
            if (end == "elif") {
                cond = expression();
                continue;
            }
            if (end == "else") {
                expect(T::CloseStmt, "'%}'");
                Body else_body = block({"endif"}, end);
                s->branches.emplace_back(nullptr, std::move(else_body));
            }
            expect(T::CloseStmt, "'%}'");
            return s;
        }
    }

    StmtPtr for_statement() {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::For;
        s->targets.push_back(name());
        while (is_op(",")) {
            next();
            s->targets.push_back(name());
        }
        if (!is_name("in")) fail("expected 'in'");
        next();
        s->expr = ternary(false);
        if (is_name("if")) {
            next();
            s->cond = ternary(false);
        }
        if (is_name("recursive")) throw Unsupported("recursive for loops");
        expect(T::CloseStmt, "'%}'");
        std::string end;
        s->body = block({"else", "endfor"}, end);
        if (end == "else") {
            expect(T::CloseStmt, "'%}'");
            s->else_body = block({"endfor"}, end);
        }
        expect(T::CloseStmt, "'%}'");
        return s;
    }

    StmtPtr macro_statement() {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Macro;
        s->text = name();
        if (is_global_function(s->text)) fail("a macro cannot be named " + s->text);
        expect_op("(");
        while (!is_op(")")) {
            s->targets.push_back(name());
            ExprPtr dflt;
            if (is_op("=")) {
                next();
                dflt = expression();
            }
            s->defaults.push_back(std::move(dflt));
            if (!is_op(",")) break;
            next();
        }
        expect_op(")");
        expect(T::CloseStmt, "'%}'");
        std::string end;
        s->body = block({"endmacro"}, end);
        expect(T::CloseStmt, "'%}'");
        macros_.insert(s->text);
        return s;
    }

    StmtPtr set_statement() {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Set;
        s->targets.push_back(name());
        if (is_op(".")) {
            next();
            s->attr = name();
        } else if (is_op(",")) {
            throw Unsupported("tuple assignment in {% set %}");
        }
        if (is_op("=")) {
            next();
            s->expr = expression();
            expect(T::CloseStmt, "'%}'");
            return s;
        }
        expect(T::CloseStmt, "'%}'");
        std::string end;
        s->body = block({"endset"}, end);
        expect(T::CloseStmt, "'%}'");
        return s;
    }

    // ----------------------------------------------------------- expressions

    ExprPtr seal(ExprPtr e) {
        int h = 0;
        for (const ExprPtr& a : e->args) h = std::max(h, a ? a->height : 0);
        for (const auto& kv : e->kwargs) h = std::max(h, kv.second->height);
        e->height = h + 1;
        if (e->height > kMaxHeight) fail("expression deeper than " + std::to_string(kMaxHeight));
        return e;
    }

    ExprPtr node(Expr::Kind kind, size_t at) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->offset = at;
        return e;
    }

    // A bare tuple (a, b) is only used as a list here.
    ExprPtr expression() { return ternary(true); }

    ExprPtr ternary(bool allow_if) {
        Guard g(*this);
        ExprPtr value = logical_or();
        if (allow_if && is_name("if")) {
            auto e = node(Expr::Kind::Ternary, peek().offset);
            next();
            ExprPtr cond = logical_or();
            ExprPtr otherwise;
            if (is_name("else")) {
                next();
                otherwise = ternary(true);
            }
            e->args.push_back(std::move(cond));
            e->args.push_back(std::move(value));
            e->args.push_back(std::move(otherwise));
            return seal(std::move(e));
        }
        return value;
    }

    ExprPtr binary(const char* op, ExprPtr l, ExprPtr r, size_t at) {
        auto e = node(Expr::Kind::Binary, at);
        e->name = op;
        e->args.push_back(std::move(l));
        e->args.push_back(std::move(r));
        return seal(std::move(e));
    }

    ExprPtr logical_or() {
        ExprPtr l = logical_and();
        while (is_name("or")) {
            const size_t at = next().offset;
            l = binary("or", std::move(l), logical_and(), at);
        }
        return l;
    }

    ExprPtr logical_and() {
        ExprPtr l = logical_not();
        while (is_name("and")) {
            const size_t at = next().offset;
            l = binary("and", std::move(l), logical_not(), at);
        }
        return l;
    }

    ExprPtr logical_not() {
        Guard g(*this);
        if (is_name("not")) {
            auto e = node(Expr::Kind::Unary, next().offset);
            e->name = "not";
            e->args.push_back(logical_not());
            return seal(std::move(e));
        }
        return comparison();
    }

    ExprPtr comparison() {
        ExprPtr l = concat();
        while (true) {
            const size_t at = peek().offset;
            if (peek().type == T::Op && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                         peek().text == ">" || peek().text == "<=" || peek().text == ">=")) {
                const std::string op = next().text;
                l = binary(op.c_str(), std::move(l), concat(), at);
            } else if (is_name("in")) {
                next();
                l = binary("in", std::move(l), concat(), at);
            } else if (is_name("not") && is_name("in", 1)) {
                next();
                next();
                l = binary("not in", std::move(l), concat(), at);
            } else {
                return l;
            }
        }
    }

    ExprPtr concat() {
        ExprPtr l = additive();
        while (is_op("~")) {
            const size_t at = next().offset;
            l = binary("~", std::move(l), additive(), at);
        }
        return l;
    }

    ExprPtr additive() {
        ExprPtr l = multiplicative();
        while (is_op("+") || is_op("-")) {
            const size_t at = peek().offset;
            const std::string op = next().text;
            l = binary(op.c_str(), std::move(l), multiplicative(), at);
        }
        return l;
    }

    ExprPtr multiplicative() {
        ExprPtr l = unary();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const size_t at = peek().offset;
            const std::string op = next().text;
            l = binary(op.c_str(), std::move(l), unary(), at);
        }
        return l;
    }

    ExprPtr unary() {
        Guard g(*this);
        if (is_op("-") || is_op("+")) {
            auto e = node(Expr::Kind::Unary, peek().offset);
            e->name = next().text;
            e->args.push_back(unary());
            return seal(std::move(e));
        }
        ExprPtr base = power();
        return filters_and_tests(std::move(base));
    }

    ExprPtr power() {
        ExprPtr l = postfix(primary());
        if (is_op("**")) {
            const size_t at = next().offset;
            return binary("**", std::move(l), unary(), at);
        }
        return l;
    }

    void call_arguments(Expr& e) {
        expect_op("(");
        while (!is_op(")")) {
            if (peek().type == T::Name && is_op("=", 1)) {
                std::string key = next().text;
                next();
                e.kwargs.emplace_back(std::move(key), expression());
            } else {
                if (!e.kwargs.empty()) fail("positional argument after a keyword argument");
                e.args.push_back(expression());
            }
            if (!is_op(",")) break;
            next();
        }
        expect_op(")");
    }

    ExprPtr postfix(ExprPtr e) {
        while (true) {
            const size_t at = peek().offset;
            if (is_op(".")) {
                next();
                auto m = node(Expr::Kind::Member, at);
                m->name = name();
                m->args.push_back(std::move(e));
                e = seal(std::move(m));
            } else if (is_op("[")) {
                next();
                e = seal(subscript(std::move(e), at));
            } else if (is_op("(")) {
                auto c = node(Expr::Kind::Call, at);
                check_callable(*e);
                c->args.push_back(std::move(e));
                call_arguments(*c);
                e = seal(std::move(c));
            } else {
                return e;
            }
        }
    }

    void check_callable(const Expr& callee) {
        if (callee.kind == Expr::Kind::Name) {
            if (callee.name == "caller") throw Unsupported("{% call %} blocks (caller())");
            if (!is_global_function(callee.name)) called_.insert(callee.name);  // must be a macro
        } else if (callee.kind == Expr::Kind::Member) {
            if (!is_method(callee.name)) throw Unsupported("the method '" + callee.name + "'");
        } else {
            throw Unsupported("calling an expression");
        }
    }

    ExprPtr subscript(ExprPtr target, size_t at) {
        ExprPtr parts[3];
        int colons = 0;
        while (!is_op("]")) {
            if (is_op(":")) {
                if (++colons > 2) fail("too many ':' in a slice");
                next();
                continue;
            }
            if (parts[colons]) fail("expected ':' or ']'");
            parts[colons] = expression();
        }
        next();
        if (colons == 0) {
            if (!parts[0]) fail("empty subscript");
            auto e = node(Expr::Kind::Index, at);
            e->args.push_back(std::move(target));
            e->args.push_back(std::move(parts[0]));
            return e;
        }
        auto e = node(Expr::Kind::Slice, at);
        e->args.push_back(std::move(target));
        for (auto& p : parts) e->args.push_back(std::move(p));
        return e;
    }

    ExprPtr filters_and_tests(ExprPtr e) {
        while (true) {
            const size_t at = peek().offset;
            if (is_op("|")) {
                next();
                auto f = node(Expr::Kind::Filter, at);
                f->name = name();
                if (!is_filter(f->name)) throw Unsupported("the filter '" + f->name + "'");
                f->args.push_back(std::move(e));
                if (is_op("(")) call_arguments(*f);
                e = seal(std::move(f));
            } else if (is_name("is")) {
                next();
                auto t = node(Expr::Kind::Test, at);
                if (is_name("not")) {
                    next();
                    t->negated = true;
                }
                // "none", "true", "false" are names here, not literals.
                t->name = name();
                if (!is_test(t->name)) throw Unsupported("the test '" + t->name + "'");
                t->args.push_back(std::move(e));
                if (is_op("(")) {
                    call_arguments(*t);
                } else if (peek().type == T::String || peek().type == T::Int || peek().type == T::Float) {
                    t->args.push_back(primary());  // `is equalto 'x'` without parentheses
                }
                e = seal(std::move(t));
            } else {
                return e;
            }
        }
    }

    ExprPtr primary() {
        Guard g(*this);
        const Token& tok = peek();
        const size_t at = tok.offset;
        auto literal = [&](Value v) {
            auto e = node(Expr::Kind::Literal, at);
            e->literal = std::move(v);
            return e;
        };
        switch (tok.type) {
            case T::String: {
                std::string s = next().text;
                while (peek().type == T::String) s += next().text;  // adjacent literals join
                return literal(Value::string(TaggedString(std::move(s))));
            }
            case T::Int: {
                const std::string digits = next().text;
                errno = 0;
                const long long v = std::strtoll(digits.c_str(), nullptr, 10);
                if (errno == ERANGE) fail("integer out of range");
                return literal(Value::integer(v));
            }
            case T::Float: return literal(Value::number(std::strtod(next().text.c_str(), nullptr)));
            case T::Name: {
                const std::string n = next().text;
                if (n == "true" || n == "True") return literal(Value::boolean(true));
                if (n == "false" || n == "False") return literal(Value::boolean(false));
                if (n == "none" || n == "None") return literal(Value::none());
                auto e = node(Expr::Kind::Name, at);
                e->name = n;
                return e;
            }
            case T::Op: break;
            default: fail("expected an expression");
        }
        if (is_op("(")) {
            next();
            ExprPtr inner = expression();
            if (is_op(",")) {
                auto list = node(Expr::Kind::List, at);  // a tuple
                list->args.push_back(std::move(inner));
                while (is_op(",")) {
                    next();
                    if (is_op(")")) break;
                    list->args.push_back(expression());
                }
                inner = std::move(list);
            }
            expect_op(")");
            if (inner->kind == Expr::Kind::List) return seal(std::move(inner));
            return inner;
        }
        if (is_op("[")) {
            next();
            auto list = node(Expr::Kind::List, at);
            while (!is_op("]")) {
                list->args.push_back(expression());
                if (!is_op(",")) break;
                next();
            }
            expect_op("]");
            return seal(std::move(list));
        }
        if (is_op("{")) {
            next();
            auto dict = node(Expr::Kind::Dict, at);
            while (!is_op("}")) {
                dict->args.push_back(expression());
                expect_op(":");
                dict->args.push_back(expression());
                if (!is_op(",")) break;
                next();
            }
            expect_op("}");
            return seal(std::move(dict));
        }
        fail("unexpected '" + tok.text + "'");
    }

    const std::vector<Token>& t_;
    std::set<std::string> macros_;  // defined
    std::set<std::string> called_;  // called by name, not built in
    size_t p_ = 0;
    int depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

}  // namespace smolinfer::text::jinja
