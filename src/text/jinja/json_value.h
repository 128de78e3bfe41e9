// JSON (a client's tool schemas and call arguments) as Jinja values, the way
// llama.cpp hands them to a template: objects keep the client's key order,
// integers stay integers, and every string is message text (plain), so a
// schema cannot smuggle control tokens into the prompt through its values.
#pragma once

#include <nlohmann/json.hpp>

#include "text/jinja/value.h"

namespace smolinfer::text::jinja {

Value from_json(const nlohmann::ordered_json& j);

}  // namespace smolinfer::text::jinja
