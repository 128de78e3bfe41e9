// Shapes a generation's events into OpenAI's response objects: a
// chat.completion or text_completion, or (streaming) the chunks of one,
// as the browser API does (web/src/openai.ts), plus the error body.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "openai_request.h"
#include "smolinfer/batch.h"
#include "smolinfer/tools.h"

namespace smolinfer::server {

// A token's raw bytes (Session::detokenize of that one id; may be part of
// a UTF-8 character).
using TokenBytes = std::function<std::string(TokenId)>;

// How a chat answer is read for tool calls: the template's syntax, the
// functions that may be called, and whether calls come in comma lists.
struct ToolParsing {
    ToolSyntax syntax;
    std::vector<std::string> names;
    bool parallel = false;
};

struct ResponseMeta {
    Endpoint endpoint = Endpoint::Chat;
    std::string id;        // "chatcmpl-..." or "cmpl-..."
    long long created = 0; // Unix seconds
    std::string model;
    bool stream = false;
    bool include_usage = false;
    bool logprobs = false;
    // Chat with callable tools: the text is read back into content and
    // tool_calls. A call is sent (streaming) once it is complete, in one
    // delta; text that ends inside a call, or that no call can be, is
    // content (llama-server returns a cut-off call, or HTTP 500).
    std::optional<ToolParsing> tools;
};

// "call_" and 24 random letters and digits.
std::string new_tool_call_id();

// "chatcmpl-" or "cmpl-" and 24 random hex digits.
std::string new_response_id(Endpoint endpoint);

// "length" for max_tokens and a full context; "stop" otherwise (end of
// generation, a stop string, a grammar that is complete, a cancel).
const char* finish_reason(StopReason stop);

// Text with each invalid UTF-8 sequence replaced by U+FFFD (as a
// non-fatal TextDecoder does), so that JSON can carry it.
std::string valid_utf8(std::string_view bytes);

// One response under construction. Streaming: start(), then event() per
// engine event, then finish() give the chunks to send (each a JSON object;
// see sse_frame). Not streaming: event() collects and finish() gives the
// one response object.
class ResponseShaper {
public:
    ResponseShaper(ResponseMeta meta, TokenBytes bytes);

    std::vector<nlohmann::json> start();
    std::vector<nlohmann::json> event(const BatchEvent& e);  // its text and log-probabilities; not `finished`
    std::vector<nlohmann::json> finish(const GenerationStats& stats);

private:
    nlohmann::json chunk(nlohmann::json choices) const;
    nlohmann::json logprobs_json(const std::vector<TokenLogprobs>& list, size_t offset) const;
    nlohmann::json top_logprob(TokenId id, float logprob) const;
    // Streaming with tools: the deltas the text so far adds (final: the last parse).
    std::vector<nlohmann::json> tool_deltas(bool final);
    const std::string& call_id(size_t index);

    ResponseMeta meta_;
    TokenBytes bytes_;
    std::string text_;                     // everything so far (not streaming)
    std::vector<TokenLogprobs> logprobs_;  // not streaming: all; streaming: those not yet sent
    size_t offset_ = 0;                    // completions' text_offset: UTF-16 units sent so far
    size_t sent_content_ = 0;              // tools: bytes of content streamed
    size_t sent_calls_ = 0;                // tools: calls streamed
    std::vector<std::string> call_ids_;
};

// "data: {json}\n\n"; the stream ends with sse_done().
std::string sse_frame(const nlohmann::json& chunk);
std::string sse_done();

// {"error":{"message","type","param","code"}}; type is OpenAI's
// ("invalid_request_error", "authentication_error", "server_error", ...).
nlohmann::json error_body(const std::string& message, const std::string& type, const std::string& param = "",
                          const std::string& code = "");

// Serializes for the wire; invalid UTF-8 (it cannot be there, but) becomes U+FFFD.
std::string dump(const nlohmann::json& j);

}  // namespace smolinfer::server
