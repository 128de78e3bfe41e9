#include "text/jinja/json_value.h"

namespace smolinfer::text::jinja {

Value from_json(const nlohmann::ordered_json& j) {
    using nlohmann::ordered_json;
    switch (j.type()) {
        case ordered_json::value_t::null: return Value::none();
        case ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
        case ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
        case ordered_json::value_t::number_unsigned: {
            const uint64_t u = j.get<uint64_t>();
            // Beyond int64 a Python int would still be exact; a float is the closest we hold.
            return u <= uint64_t(INT64_MAX) ? Value::integer(int64_t(u)) : Value::number(double(u));
        }
        case ordered_json::value_t::number_float: return Value::number(j.get<double>());
        case ordered_json::value_t::string: return Value::string(TaggedString(j.get<std::string>(), true));
        case ordered_json::value_t::array: {
            Array a;
            a.reserve(j.size());
            for (const auto& item : j) a.push_back(from_json(item));
            return Value::array(std::move(a));
        }
        case ordered_json::value_t::object: {
            Object o;
            for (const auto& [key, item] : j.items()) o.set(key, from_json(item));
            return Value::object(std::move(o));
        }
        default: return Value::none();  // binary and discarded values never come from parsed text
    }
}

}  // namespace smolinfer::text::jinja
