// Python methods on strings and dicts: s.strip(), s.split('x'), d.items(), ...
#include <set>

#include "text/jinja/builtins.h"
#include "text/jinja/errors.h"
#include "text/jinja/string_ops.h"

namespace smolinfer::text::jinja {

namespace {

std::optional<std::string> optional_chars(const Args& args, size_t k) {
    if (args.size() <= k || args[k].is_none()) return std::nullopt;
    return need_string(args[k], "the characters to strip").str();
}

long optional_count(const Args& args, size_t k) {
    if (args.size() <= k) return -1;
    if (args[k].kind != Value::Kind::Int) type_error("a count must be an integer", args[k]);
    return long(args[k].i);
}

Value string_list(const std::vector<TaggedString>& parts) {
    Array out;
    for (const TaggedString& p : parts) out.push_back(Value::string(p));
    return Value::array(std::move(out));
}

Value string_method(const TaggedString& s, const std::string& name, const Args& args) {
    if (name == "strip") return Value::string(strip(s, optional_chars(args, 0), true, true));
    if (name == "lstrip") return Value::string(strip(s, optional_chars(args, 0), true, false));
    if (name == "rstrip") return Value::string(strip(s, optional_chars(args, 0), false, true));
    if (name == "split") return string_list(split(s, optional_chars(args, 0), optional_count(args, 1)));
    if (name == "upper") return Value::string(upper(s));
    if (name == "lower") return Value::string(lower(s));
    if (name == "title") return Value::string(title(s));
    if (name == "capitalize") return Value::string(capitalize(s));
    if (name == "startswith" || name == "endswith") {
        if (args.empty()) throw RenderError(name + "() needs an argument");
        const std::string text = s.str();
        const std::string affix = need_string(args[0], name + "()").str();
        if (affix.size() > text.size()) return Value::boolean(false);
        return Value::boolean(name == "startswith" ? text.compare(0, affix.size(), affix) == 0
                                                   : text.compare(text.size() - affix.size(), affix.size(), affix) == 0);
    }
    if (name == "replace") {
        if (args.size() < 2) throw RenderError("replace() needs two arguments");
        return Value::string(replace(s, need_string(args[0], "replace()").str(), need_string(args[1], "replace()"),
                                     optional_count(args, 2)));
    }
    throw RenderError("strings have no method '" + name + "'");
}

Value dict_method(const Object& o, const std::string& name, const Args& args) {
    if (name == "items" || name == "keys" || name == "values") {
        Array out;
        for (const auto& kv : o.items) {
            Value key = Value::string(TaggedString(kv.first));
            if (name == "items") out.push_back(Value::array({key, kv.second}));
            if (name == "keys") out.push_back(key);
            if (name == "values") out.push_back(kv.second);
        }
        return Value::array(std::move(out));
    }
    if (name == "get") {
        if (args.empty()) throw RenderError("get() needs a key");
        const Value* v = o.find(need_string(args[0], "a dict key").str());
        if (v) return *v;
        return args.size() > 1 ? args[1] : Value::none();
    }
    throw RenderError("dicts have no method '" + name + "'");
}

}  // namespace

bool is_method(const std::string& name) {
    static const std::set<std::string> kMethods = {"strip", "lstrip", "rstrip", "split", "upper", "lower",
                                                   "title", "capitalize", "startswith", "endswith", "replace",
                                                   "items", "keys", "values", "get"};
    return kMethods.count(name) != 0;
}

Value call_method(const Value& receiver, const std::string& name, const Args& args, const Kwargs&) {
    if (receiver.is_string()) return string_method(receiver.s, name, args);
    if (receiver.is_object()) return dict_method(*receiver.o, name, args);
    type_error("the method '" + name + "' needs a string or a dict", receiver);
}

}  // namespace smolinfer::text::jinja
