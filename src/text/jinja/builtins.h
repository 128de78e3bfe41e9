// The filters, tests, methods and global functions the interpreter knows.
// The parser rejects any other name (Unsupported), so the evaluator never
// meets an unknown one.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace smolinfer::text::jinja {

using Args = std::vector<Value>;
using Kwargs = std::vector<std::pair<std::string, Value>>;

bool is_filter(const std::string& name);
bool is_test(const std::string& name);
bool is_method(const std::string& name);
bool is_global_function(const std::string& name);

// Throw RenderError for arguments of the wrong type.
Value apply_filter(const std::string& name, const Value& subject, const Args& args, const Kwargs& kwargs);
bool apply_test(const std::string& name, const Value& subject, const Args& args);
Value call_method(const Value& receiver, const std::string& name, const Args& args, const Kwargs& kwargs);

// Helpers the builtins share.
const Value* kwarg(const Kwargs& kwargs, const char* name);
[[noreturn]] void type_error(const std::string& what, const Value& got);
const TaggedString& need_string(const Value& v, const std::string& what);

}  // namespace smolinfer::text::jinja
