#include <string>

#include "grammar/json_schema_converter.h"
#include "smolinfer/error.h"

namespace smolinfer::grammar::detail {

const Json& Converter::ref_target(const Json& ref, const std::string& pointer, std::string* target_pointer) {
    if (!ref.is_string()) fail(pointer, "'$ref' must be a string");
    const std::string r = ref.get<std::string>();
    if (r.rfind("#/", 0) != 0) {
        if (r.find("://") != std::string::npos) fail(pointer, "remote $ref '" + r + "' is not supported (only local #/... references)");
        fail(pointer, "$ref '" + r + "' is not supported (only local #/... references)");
    }
    const Json* node = &root_;
    size_t start = 2;
    while (true) {
        const size_t slash = r.find('/', start);
        std::string token = r.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        std::string key;
        for (size_t i = 0; i < token.size(); ++i) {
            if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
                key += token[i + 1] == '0' ? '~' : '/';
                ++i;
            } else {
                key += token[i];
            }
        }
        if (node->is_object() && node->contains(key)) {
            node = &node->at(key);
        } else if (node->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
                   key.size() < 10 && std::stoul(key) < node->size()) {
            node = &(*node)[std::stoul(key)];
        } else {
            fail(pointer, "$ref '" + r + "' does not resolve: no '" + key + "'");
        }
        if (slash == std::string::npos) break;
        start = slash + 1;
    }
    *target_pointer = r.substr(1);
    return *node;
}

std::string Converter::resolve_ref(const Json& ref, const std::string& pointer) {
    std::string target_pointer;
    const Json& target = ref_target(ref, pointer, &target_pointer);
    const std::string r = ref.get<std::string>();
    std::string name = "ref" + rule_name_from(r.substr(1));
    // A reference being resolved further up (recursion) is used by name.
    if (rules_.find(name) == rules_.end() && refs_in_progress_.count(r) == 0) {
        refs_in_progress_.insert(r);
        name = visit(target, name, target_pointer);
        refs_in_progress_.erase(r);
    }
    return name;
}

bool Converter::all_alternatives_are(const Json& alternatives, const std::string& type) {
    if (type == "integer") return false;  // a "number" alternative could produce 1.5
    const Kind wanted = kind_of_type(type);
    for (const Json& alt : alternatives) {
        if (produced_kind(alt, 0) != wanted) return false;
    }
    return true;
}

Kind Converter::produced_kind(const Json& schema, int depth) {
    if (!schema.is_object() || depth > 16) return Kind::Any;
    if (schema.contains("$ref")) {
        const Json& ref = schema.at("$ref");
        if (!ref.is_string() || ref.get<std::string>().rfind("#/", 0) != 0) return Kind::Any;
        std::string target_pointer;
        try {
            return produced_kind(ref_target(ref, "", &target_pointer), depth + 1);
        } catch (const Error&) {
            return Kind::Any;  // reported where the reference is visited
        }
    }
    for (const char* key : {"oneOf", "anyOf"}) {
        if (!schema.contains(key)) continue;
        const Json& alts = schema.at(key);
        if (!alts.is_array() || alts.empty()) return Kind::Any;
        const Kind first = produced_kind(alts[0], depth + 1);
        for (const Json& alt : alts) {
            if (produced_kind(alt, depth + 1) != first) return Kind::Any;
        }
        return first;
    }
    if (schema.contains("const") || schema.contains("enum")) return Kind::Any;
    const Json type = schema.contains("type") ? schema.at("type") : Json();
    if (type.is_string()) return kind_of_type(type.get<std::string>());
    if (!type.is_null()) return Kind::Any;
    const bool closed_additional =
        schema.contains("additionalProperties") && schema.at("additionalProperties") != Json(true);
    if (schema.contains("properties") || closed_additional || schema.empty()) {
        return Kind::Object;
    }
    if (schema.contains("items") || schema.contains("prefixItems")) return Kind::Array;
    return Kind::Any;
}

}  // namespace smolinfer::grammar::detail
