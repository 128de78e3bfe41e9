// The server's response shaping: engine events to OpenAI's objects and
// chunks (as web/src/openai.ts shapes them), SSE framing, error bodies.
#include <cmath>

#include <gtest/gtest.h>

#include "server/openai_response.h"

using nlohmann::json;
using namespace smolinfer;
using namespace smolinfer::server;

namespace {

// Token i's bytes: "t<i>", but 7 is the first byte of a two-byte character.
std::string fake_bytes(TokenId id) { return id == 7 ? std::string("\xC3") : "t" + std::to_string(id); }

BatchEvent token(TokenId id, std::string text, std::optional<TokenLogprobs> lp = std::nullopt) {
    return {0, id, std::move(text), std::move(lp), std::nullopt};
}

GenerationStats stats(StopReason stop, int prompt, int generated) {
    GenerationStats s;
    s.stop = stop;
    s.prompt_tokens = prompt;
    s.generated_tokens = generated;
    return s;
}

ResponseMeta meta(Endpoint endpoint, bool stream, bool logprobs = false, bool usage = false) {
    ResponseMeta m;
    m.endpoint = endpoint;
    m.id = endpoint == Endpoint::Chat ? "chatcmpl-x" : "cmpl-x";
    m.created = 1700000000;
    m.model = "m.gguf";
    m.stream = stream;
    m.logprobs = logprobs;
    m.include_usage = usage;
    return m;
}

TEST(OpenAIResponse, FinishReasons) {
    EXPECT_STREQ(finish_reason(StopReason::EndOfGeneration), "stop");
    EXPECT_STREQ(finish_reason(StopReason::StopString), "stop");
    EXPECT_STREQ(finish_reason(StopReason::GrammarExhausted), "stop");
    EXPECT_STREQ(finish_reason(StopReason::Stopped), "stop");
    EXPECT_STREQ(finish_reason(StopReason::MaxTokens), "length");
    EXPECT_STREQ(finish_reason(StopReason::ContextFull), "length");
}

TEST(OpenAIResponse, Ids) {
    const std::string a = new_response_id(Endpoint::Chat), b = new_response_id(Endpoint::Chat);
    EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
    EXPECT_EQ(a.size(), 9u + 24u);
    EXPECT_NE(a, b);
    EXPECT_EQ(new_response_id(Endpoint::Completion).rfind("cmpl-", 0), 0u);
}

TEST(OpenAIResponse, ChatCompletion) {
    ResponseShaper s(meta(Endpoint::Chat, false), fake_bytes);
    EXPECT_TRUE(s.start().empty());
    EXPECT_TRUE(s.event(token(1, "Hel")).empty());
    EXPECT_TRUE(s.event(token(2, "lo")).empty());
    const auto out = s.finish(stats(StopReason::EndOfGeneration, 10, 2));
    ASSERT_EQ(out.size(), 1u);
    const json expected = json::parse(R"({"id":"chatcmpl-x","object":"chat.completion","created":1700000000,"model":"m.gguf",
        "choices":[{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null},"logprobs":null,"finish_reason":"stop"}],
        "usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}})");
    EXPECT_EQ(out[0], expected);
}

TEST(OpenAIResponse, ChatStreamWithUsage) {
    ResponseShaper s(meta(Endpoint::Chat, true, false, true), fake_bytes);
    std::vector<json> chunks = s.start();
    for (auto& c : s.event(token(1, "Hi"))) chunks.push_back(c);
    for (auto& c : s.event(token(7, ""))) chunks.push_back(c);  // held back: no chunk
    for (auto& c : s.finish(stats(StopReason::MaxTokens, 4, 2))) chunks.push_back(c);
    ASSERT_EQ(chunks.size(), 4u);
    EXPECT_EQ(chunks[0]["choices"][0]["delta"], json::parse(R"({"role":"assistant","content":""})"));
    EXPECT_EQ(chunks[1]["choices"][0]["delta"], json::parse(R"({"content":"Hi"})"));
    EXPECT_TRUE(chunks[1]["usage"].is_null());
    EXPECT_EQ(chunks[1]["object"], "chat.completion.chunk");
    EXPECT_EQ(chunks[2]["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(chunks[2]["choices"][0]["delta"], json::object());
    EXPECT_EQ(chunks[3]["choices"], json::array());
    EXPECT_EQ(chunks[3]["usage"], json::parse(R"({"prompt_tokens":4,"completion_tokens":2,"total_tokens":6})"));
}

TEST(OpenAIResponse, ChatStreamWithoutUsageHasNoUsageField) {
    ResponseShaper s(meta(Endpoint::Chat, true), fake_bytes);
    const auto out = s.finish(stats(StopReason::EndOfGeneration, 1, 0));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FALSE(out[0].contains("usage"));
}

TEST(OpenAIResponse, ChatLogprobs) {
    ResponseShaper s(meta(Endpoint::Chat, false, true), fake_bytes);
    s.event(token(3, "t3", TokenLogprobs{3, -0.5f, {{3, -0.5f}, {7, -INFINITY}}}));
    const auto out = s.finish(stats(StopReason::MaxTokens, 1, 1));
    const json expected = json::parse(R"({"content":[{"token":"t3","logprob":-0.5,"bytes":[116,51],
        "top_logprobs":[{"token":"t3","logprob":-0.5,"bytes":[116,51]},{"token":"\ufffd","logprob":-9999,"bytes":[195]}]}],"refusal":null})");
    EXPECT_EQ(out[0]["choices"][0]["logprobs"], expected);
}

TEST(OpenAIResponse, StreamedLogprobsOfHeldBackTokensGoWithTheNextText) {
    ResponseShaper s(meta(Endpoint::Chat, true, true), fake_bytes);
    EXPECT_TRUE(s.event(token(7, "", TokenLogprobs{7, -1.0f, {}})).empty());
    const auto out = s.event(token(8, "\xC3\xA9", TokenLogprobs{8, -2.0f, {}}));
    ASSERT_EQ(out.size(), 1u);
    const json& content = out[0]["choices"][0]["logprobs"]["content"];
    ASSERT_EQ(content.size(), 2u);
    EXPECT_EQ(content[0]["bytes"], json::array({195}));
    EXPECT_EQ(content[1]["token"], "t8");
    // Nothing left for the last chunk.
    EXPECT_TRUE(s.finish(stats(StopReason::EndOfGeneration, 1, 2))[0]["choices"][0]["logprobs"].is_null());
}

TEST(OpenAIResponse, CompletionLogprobsCountUtf16Offsets) {
    ResponseShaper s(meta(Endpoint::Completion, false, true), [](TokenId id) {
        return id == 1 ? std::string("\xF0\x9F\x98\x80") : std::string("ab");  // an emoji: two UTF-16 units
    });
    s.event(token(1, "\xF0\x9F\x98\x80", TokenLogprobs{1, -0.25f, {{1, -0.25f}, {2, -3.0f}}}));
    s.event(token(2, "ab", TokenLogprobs{2, -1.0f, {}}));
    const auto out = s.finish(stats(StopReason::StopString, 3, 2));
    const json& c = out[0]["choices"][0];
    EXPECT_EQ(out[0]["object"], "text_completion");
    EXPECT_EQ(c["text"], "\xF0\x9F\x98\x80" "ab");
    EXPECT_EQ(c["finish_reason"], "stop");
    EXPECT_EQ(c["logprobs"]["tokens"], json::parse(R"(["😀","ab"])"));
    EXPECT_EQ(c["logprobs"]["token_logprobs"], json::parse("[-0.25,-1.0]"));
    EXPECT_EQ(c["logprobs"]["top_logprobs"], json::parse(R"([{"😀":-0.25,"ab":-3.0},{}])"));
    EXPECT_EQ(c["logprobs"]["text_offset"], json::parse("[0,2]"));
}

TEST(OpenAIResponse, CompletionStreamChunks) {
    ResponseShaper s(meta(Endpoint::Completion, true, false, true), fake_bytes);
    EXPECT_TRUE(s.start().empty());  // no role chunk for completions
    const auto a = s.event(token(1, "x"));
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0]["choices"][0]["text"], "x");
    EXPECT_TRUE(a[0]["choices"][0]["finish_reason"].is_null());
    const auto end = s.finish(stats(StopReason::EndOfGeneration, 2, 1));
    ASSERT_EQ(end.size(), 2u);
    EXPECT_EQ(end[0]["choices"][0]["text"], "");
    EXPECT_EQ(end[0]["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(end[1]["usage"]["total_tokens"], 3);
}

TEST(OpenAIResponse, ValidUtf8ReplacesAsTextDecoderDoes) {
    EXPECT_EQ(valid_utf8("abc"), "abc");
    EXPECT_EQ(valid_utf8("\xC3\xA9"), "\xC3\xA9");
    EXPECT_EQ(valid_utf8("\xF0\x9F\x98"), "\xEF\xBF\xBD");                      // truncated: one U+FFFD
    EXPECT_EQ(valid_utf8("\xC0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");             // overlong: two
    EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate: three
    EXPECT_EQ(valid_utf8("\xE2\x82x"), "\xEF\xBF\xBDx");                       // broken, then read again
    EXPECT_EQ(valid_utf8("\xFF"), "\xEF\xBF\xBD");
}

TEST(OpenAIResponse, SseAndErrors) {
    EXPECT_EQ(sse_frame(json{{"a", 1}}), "data: {\"a\":1}\n\n");
    EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
    EXPECT_EQ(error_body("bad", "invalid_request_error", "top_p"),
              json::parse(R"({"error":{"message":"bad","type":"invalid_request_error","param":"top_p","code":null}})"));
    EXPECT_EQ(error_body("no", "authentication_error", "", "invalid_api_key")["error"]["param"], nullptr);
    EXPECT_EQ(dump(json("\xFF")), "\"\xEF\xBF\xBD\"");
}

// ---------------------------------------------------------------- tool calls

ResponseMeta tool_meta(bool stream) {
    ResponseMeta m = meta(Endpoint::Chat, stream);
    ToolParsing t;
    t.syntax.kind = ToolSyntax::Kind::Json;
    t.syntax.call_start = "<tool_call>\n";
    t.syntax.call_end = "</tool_call>";
    t.names = {"get_weather", "add"};
    t.parallel = true;
    m.tools = t;
    return m;
}

// What a chat answer made of these pieces gives, shaped whole and streamed:
// {message, finish_reason} and, from the stream, {content, calls, finish_reason}.
struct Shaped {
    json message;
    std::string finish;
    std::string streamed_content;
    json streamed_calls = json::array();
    std::string streamed_finish;
};

Shaped shape(const std::vector<std::string>& pieces, StopReason stop) {
    Shaped r;
    ResponseShaper whole(tool_meta(false), fake_bytes);
    ResponseShaper stream(tool_meta(true), fake_bytes);
    std::vector<json> chunks = stream.start();
    for (size_t i = 0; i < pieces.size(); ++i) {
        whole.event(token(TokenId(i), pieces[i]));
        for (auto& c : stream.event(token(TokenId(i), pieces[i]))) chunks.push_back(c);
    }
    const json done = whole.finish(stats(stop, 5, int(pieces.size()))).front();
    r.message = done["choices"][0]["message"];
    r.finish = done["choices"][0]["finish_reason"];
    for (auto& c : stream.finish(stats(stop, 5, int(pieces.size())))) chunks.push_back(c);
    for (const json& c : chunks) {
        const json& choice = c["choices"][0];
        const json& d = choice["delta"];
        if (d.contains("content") && d["content"].is_string()) r.streamed_content += d["content"].get<std::string>();
        if (d.contains("tool_calls")) {
            for (const json& tc : d["tool_calls"]) {
                EXPECT_EQ(tc["index"].get<size_t>(), r.streamed_calls.size());
                r.streamed_calls.push_back({{"id", tc["id"]}, {"type", tc["type"]}, {"function", tc["function"]}});
            }
        }
        if (choice["finish_reason"].is_string()) r.streamed_finish = choice["finish_reason"];
    }
    return r;
}

TEST(OpenAIResponseTools, CallsAfterTextWholeAndStreamedAlike) {
    const auto r = shape({"Let", " me", " check", ".\n", "<tool_call>", "\n", "{\"name\": \"get_weather\", ",
                          "\"arguments\": {\"location\": \"Par", "is\"}}", "\n</tool_call>", "\n<tool_call>\n",
                          "{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"},
                         StopReason::EndOfGeneration);
    EXPECT_EQ(r.finish, "tool_calls");
    EXPECT_EQ(r.message["content"], "Let me check.\n");
    ASSERT_EQ(r.message["tool_calls"].size(), 2u);
    EXPECT_EQ(r.message["tool_calls"][0]["function"], json::parse(R"({"name":"get_weather","arguments":"{\"location\": \"Paris\"}"})"));
    EXPECT_EQ(r.message["tool_calls"][1]["function"], json::parse(R"({"name":"add","arguments":"{\"a\": 1, \"b\": 2}"})"));
    EXPECT_EQ(r.message["tool_calls"][0]["type"], "function");
    EXPECT_EQ(r.message["tool_calls"][0]["id"].get<std::string>().rfind("call_", 0), 0u);
    EXPECT_EQ(r.streamed_finish, "tool_calls");
    EXPECT_EQ(r.streamed_content, "Let me check.\n");
    ASSERT_EQ(r.streamed_calls.size(), 2u);
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(r.streamed_calls[i]["function"], r.message["tool_calls"][i]["function"]);
}

// llama-server returns a call cut off by max_tokens (arguments "{\"location\": \"Par")
// as a tool call: here it stays text.
TEST(OpenAIResponseTools, CallCutOffByMaxTokensStaysContent) {
    const auto r = shape({"Hi ", "<tool_call>\n", "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Par"},
                         StopReason::MaxTokens);
    EXPECT_EQ(r.finish, "length");
    EXPECT_FALSE(r.message.contains("tool_calls"));
    EXPECT_EQ(r.message["content"], "Hi <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Par");
    EXPECT_EQ(r.streamed_content, r.message["content"]);
    EXPECT_TRUE(r.streamed_calls.empty());
    EXPECT_EQ(r.streamed_finish, "length");
}

// Text no call can be (llama-server: HTTP 500, the text lost) is content.
TEST(OpenAIResponseTools, OutputThatIsNoCallIsContent) {
    const auto r = shape({"  Use ", "<tool_call>\n{\"name\": \"sub\"}", " here"}, StopReason::EndOfGeneration);
    EXPECT_EQ(r.finish, "stop");
    EXPECT_FALSE(r.message.contains("tool_calls"));
    EXPECT_EQ(r.message["content"], "Use <tool_call>\n{\"name\": \"sub\"} here");
    EXPECT_EQ(r.streamed_content, r.message["content"]);
    EXPECT_EQ(r.streamed_finish, "stop");
    // Plain answers keep their text (leading whitespace dropped, as llama-server does with tools).
    const auto plain = shape({"\n Hello", " there <tool", "s>"}, StopReason::EndOfGeneration);
    EXPECT_EQ(plain.message["content"], "Hello there <tools>");
    EXPECT_EQ(plain.streamed_content, "Hello there <tools>");
}

}  // namespace
