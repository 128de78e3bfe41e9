#include "openai_embeddings.h"

#include <cstring>

#include "openai_request.h"

namespace smolinfer::server {

namespace {

using nlohmann::json;

[[noreturn]] void refuse_input(const std::string& what, const std::string& param = "input") { throw BadRequest(what, param); }

std::vector<TokenId> token_list(const json& a, const std::string& where) {
    if (a.empty()) refuse_input("'input' must not contain an empty list of tokens (" + where + ")");
    std::vector<TokenId> ids;
    for (const json& v : a) {
        if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 2147483647LL) {
            refuse_input("'input' token ids must be integers >= 0 (" + where + ")");
        }
        ids.push_back(TokenId(v.get<long long>()));
    }
    return ids;
}

EmbeddingInput text_input(const json& v, const std::string& where) {
    if (v.get_ref<const std::string&>().empty()) refuse_input("'input' must not contain an empty string (" + where + ")");
    return {v.get<std::string>(), {}, false};
}

std::vector<EmbeddingInput> read_inputs(const json& in) {
    if (in.is_string()) return {text_input(in, "input")};
    if (!in.is_array()) refuse_input("'input' must be a string, an array of strings, or token ids");
    if (in.empty()) refuse_input("'input' must not be an empty array");
    if (in.size() > size_t(kMaxEmbeddingInputs)) {
        refuse_input("'input' has " + std::to_string(in.size()) + " items; at most " + std::to_string(kMaxEmbeddingInputs));
    }
    if (in[0].is_number()) return {{"", token_list(in, "input"), true}};
    std::vector<EmbeddingInput> out;
    for (size_t i = 0; i < in.size(); ++i) {
        const std::string where = "input[" + std::to_string(i) + "]";
        if (in[i].is_string()) {
            out.push_back(text_input(in[i], where));
        } else if (in[i].is_array()) {
            out.push_back({"", token_list(in[i], where), true});
        } else {
            refuse_input("'input' must be a string, an array of strings, or token ids (" + where + ")");
        }
    }
    return out;
}

// Base64 of the floats' little-endian bytes, as OpenAI encodes them.
std::string base64_floats(const std::vector<float>& v) {
    static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<unsigned char> bytes(v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &v[i], 4);
        for (int b = 0; b < 4; ++b) bytes[i * 4 + size_t(b)] = static_cast<unsigned char>(u >> (8 * b));
    }
    std::string out;
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const uint32_t n = uint32_t(bytes[i]) << 16 | (i + 1 < bytes.size() ? uint32_t(bytes[i + 1]) << 8 : 0) |
                           (i + 2 < bytes.size() ? uint32_t(bytes[i + 2]) : 0);
        out += abc[n >> 18 & 63];
        out += abc[n >> 12 & 63];
        out += i + 1 < bytes.size() ? abc[n >> 6 & 63] : '=';
        out += i + 2 < bytes.size() ? abc[n & 63] : '=';
    }
    return out;
}

}  // namespace

EmbeddingsRequest parse_embeddings_request(std::string_view body) {
    json j;
    try {
        j = json::parse(body);
    } catch (const json::exception&) {
        throw BadRequest("the body is not valid JSON", "");
    }
    if (!j.is_object()) throw BadRequest("the body must be a JSON object", "");
    EmbeddingsRequest r;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& k = it.key();
        const json& v = it.value();
        if (k == "input") {
            r.inputs = read_inputs(v);
        } else if (v.is_null()) {
            continue;  // OpenAI's clients send absent fields as null
        } else if (k == "model") {
            if (!v.is_string()) refuse_input("'model' must be a string", k);
            r.model = v.get<std::string>();
        } else if (k == "encoding_format") {
            if (v != "float" && v != "base64") refuse_input("'encoding_format' must be \"float\" or \"base64\"", k);
            r.base64 = v == "base64";
        } else if (k == "dimensions") {
            if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 1000000) {
                refuse_input("'dimensions' must be an integer >= 1", k);
            }
            r.dimensions = int(v.get<long long>());
        } else if (k != "user") {
            throw BadRequest("unknown field '" + k + "'", k);
        }
    }
    if (r.inputs.empty()) refuse_input("'input' is required");
    return r;
}

std::vector<float> shorten(const std::vector<float>& v, int dimensions) {
    return normalized(std::vector<float>(v.begin(), v.begin() + dimensions));
}

json embeddings_response(const std::vector<std::vector<float>>& vectors, bool base64, const std::string& model,
                         int prompt_tokens) {
    json data = json::array();
    for (size_t i = 0; i < vectors.size(); ++i) {
        data.push_back({{"object", "embedding"},
                        {"index", i},
                        {"embedding", base64 ? json(base64_floats(vectors[i])) : json(vectors[i])}});
    }
    return {{"object", "list"},
            {"data", std::move(data)},
            {"model", model},
            {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace smolinfer::server
