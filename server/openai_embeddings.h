// POST /v1/embeddings in OpenAI's shape: the request read field by field
// (the browser API's engine.embeddings.create takes the same fields with the
// same rules, web/src/openai-embeddings.ts), and the response.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "smolinfer/session.h"

namespace smolinfer::server {

// One input: a text, or token ids (OpenAI takes both).
struct EmbeddingInput {
    std::string text;
    std::vector<TokenId> tokens;
    bool is_tokens = false;
};

struct EmbeddingsRequest {
    std::vector<EmbeddingInput> inputs;
    std::optional<std::string> model;
    bool base64 = false;            // encoding_format "base64": little-endian float32 bytes
    std::optional<int> dimensions;  // keep the first N values, normalised again
};

constexpr int kMaxEmbeddingInputs = 2048;  // OpenAI's limit per request

// Throws BadRequest (openai_request.h) naming the field at fault: not an
// object, an unknown field, no input, an empty text or list, more than
// kMaxEmbeddingInputs inputs, a bad encoding_format or dimensions.
EmbeddingsRequest parse_embeddings_request(std::string_view body);

// The first `dimensions` values of a unit vector, as a unit vector again
// (OpenAI's shortened embeddings).
std::vector<float> shorten(const std::vector<float>& v, int dimensions);

// {"object":"list","data":[{"object":"embedding","index","embedding"}],"model","usage"}.
nlohmann::json embeddings_response(const std::vector<std::vector<float>>& vectors, bool base64, const std::string& model,
                                   int prompt_tokens);

}  // namespace smolinfer::server
