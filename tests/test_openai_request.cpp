// The server's request parsing: OpenAI bodies to engine options, and the
// 400s it gives, with the same rules as the browser API (web/src/openai-request.ts).
#include <gtest/gtest.h>

#include "server/openai_request.h"

using smolinfer::server::BadRequest;
using smolinfer::server::Endpoint;
using smolinfer::server::parse_request;

namespace {

constexpr const char* kUser = R"("messages":[{"role":"user","content":"Hi"}])";

smolinfer::server::ParsedRequest chat(const std::string& fields) {
    return parse_request(Endpoint::Chat, std::string("{") + kUser + (fields.empty() ? "" : "," + fields) + "}");
}

// The BadRequest a chat body with these extra fields gets.
BadRequest chat_error(const std::string& fields) {
    try {
        chat(fields);
    } catch (const BadRequest& e) {
        return e;
    }
    ADD_FAILURE() << "accepted: " << fields;
    return BadRequest("", "");
}

BadRequest error_of(Endpoint endpoint, const std::string& body) {
    try {
        parse_request(endpoint, body);
    } catch (const BadRequest& e) {
        return e;
    }
    ADD_FAILURE() << "accepted: " << body;
    return BadRequest("", "");
}

TEST(OpenAIRequest, MinimalChatKeepsTheEngineDefaults) {
    const auto r = chat("");
    ASSERT_EQ(r.messages.size(), 1u);
    EXPECT_EQ(r.messages[0].role, "user");
    EXPECT_EQ(r.messages[0].content, "Hi");
    EXPECT_FALSE(r.model.has_value());
    EXPECT_FALSE(r.stream);
    EXPECT_FALSE(r.max_tokens.has_value());  // until the context is full
    const smolinfer::SamplingParams defaults;
    EXPECT_EQ(r.options.sampling.temperature, defaults.temperature);
    EXPECT_EQ(r.options.sampling.top_k, defaults.top_k);
    EXPECT_EQ(r.options.sampling.top_p, defaults.top_p);
    EXPECT_EQ(r.options.sampling.min_p, defaults.min_p);
    EXPECT_EQ(r.options.sampling.seed, defaults.seed);
    EXPECT_FALSE(r.options.logprobs);
    EXPECT_TRUE(r.options.stop.empty());
    EXPECT_TRUE(r.options.grammar.empty());
    EXPECT_TRUE(r.options.json_schema.empty());
}

TEST(OpenAIRequest, MapsEveryField) {
    const auto r = chat(R"("model":"m","max_tokens":7,"temperature":0.5,"top_p":0.9,"seed":42,"stop":["a","bc"],)"
                        R"("logprobs":true,"top_logprobs":3,"frequency_penalty":0.25,"presence_penalty":-1,)"
                        R"("logit_bias":{"15":-100,"0":2.5},"top_k":5,"min_p":0.1,"repeat_penalty":1.1,)"
                        R"("stream":true,"stream_options":{"include_usage":true},"user":"u1","n":1)");
    EXPECT_EQ(r.model, "m");
    EXPECT_EQ(r.max_tokens, 7);
    const auto& s = r.options.sampling;
    EXPECT_FLOAT_EQ(s.temperature, 0.5f);
    EXPECT_FLOAT_EQ(s.top_p, 0.9f);
    EXPECT_EQ(s.seed, 42u);
    EXPECT_EQ(r.options.stop, (std::vector<std::string>{"a", "bc"}));
    EXPECT_TRUE(r.options.logprobs);
    EXPECT_EQ(r.options.top_logprobs, 3);
    EXPECT_FLOAT_EQ(s.frequency_penalty, 0.25f);
    EXPECT_FLOAT_EQ(s.presence_penalty, -1.0f);
    ASSERT_EQ(s.logit_bias.size(), 2u);
    EXPECT_EQ(chat(R"("logit_bias":{"2147483647":1})").options.sampling.logit_bias[0].token, 2147483647);
    // In the body's order.
    EXPECT_EQ(s.logit_bias[0].token, 15);
    EXPECT_FLOAT_EQ(s.logit_bias[0].bias, -100.0f);
    EXPECT_EQ(s.logit_bias[1].token, 0);
    EXPECT_FLOAT_EQ(s.logit_bias[1].bias, 2.5f);
    EXPECT_EQ(s.top_k, 5);
    EXPECT_FLOAT_EQ(s.min_p, 0.1f);
    EXPECT_FLOAT_EQ(s.repeat_penalty, 1.1f);
    EXPECT_TRUE(r.stream);
    EXPECT_TRUE(r.include_usage);
}

TEST(OpenAIRequest, NullMeansAbsent) {
    const auto r = chat(R"("temperature":null,"max_tokens":null,"stop":null,"response_format":null,"seed":null)");
    EXPECT_EQ(r.options.sampling.temperature, smolinfer::SamplingParams{}.temperature);
    EXPECT_FALSE(r.max_tokens.has_value());
}

TEST(OpenAIRequest, ContentPartsAreJoined) {
    const auto r = parse_request(Endpoint::Chat, R"({"messages":[{"role":"system","content":"S"},)"
                                                 R"({"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})");
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[1].content, "ab");
}

TEST(OpenAIRequest, MaxCompletionTokens) {
    EXPECT_EQ(chat(R"("max_completion_tokens":9)").max_tokens, 9);
    EXPECT_EQ(chat(R"("max_completion_tokens":9,"max_tokens":9)").max_tokens, 9);
    EXPECT_EQ(chat_error(R"("max_completion_tokens":9,"max_tokens":8)").param(), "max_completion_tokens");
    EXPECT_EQ(chat(R"("max_tokens":0)").max_tokens, 0);
    EXPECT_EQ(chat(R"("max_tokens":2147483647)").max_tokens, 2147483647);
}

TEST(OpenAIRequest, ResponseFormat) {
    EXPECT_EQ(chat(R"("response_format":{"type":"text"})").options.json_schema, "");
    EXPECT_EQ(chat(R"("response_format":{"type":"json_object"})").options.json_schema, R"({"type":"object"})");
    const auto r = chat(R"("response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,)"
                        R"("schema":{"type":"object","properties":{"a":{"type":"integer"}}}}})");
    // The client's key order, as llama-server keeps it (and the browser API):
    // a schema's properties are generated in that order.
    EXPECT_EQ(r.options.json_schema, R"({"type":"object","properties":{"a":{"type":"integer"}}})");
    EXPECT_EQ(chat_error(R"("response_format":{"type":"xml"})").param(), "response_format.type");
    EXPECT_EQ(chat_error(R"("response_format":{"type":"json_object","json_schema":{}})").param(), "response_format.json_schema");
    EXPECT_EQ(chat_error(R"("response_format":{"type":"json_schema","json_schema":{"name":"bad name","schema":{}}})").param(),
              "response_format.json_schema.name");
    const auto named = [](const std::string& name) {
        return R"("response_format":{"type":"json_schema","json_schema":{"name":")" + name + R"(","schema":{}}})";
    };
    EXPECT_EQ(chat(named(std::string(64, 'a'))).options.json_schema, "{}");
    EXPECT_EQ(chat(named("A-z_09")).options.json_schema, "{}");
    EXPECT_EQ(chat_error(named(std::string(65, 'a'))).param(), "response_format.json_schema.name");
    EXPECT_EQ(chat_error(named("")).param(), "response_format.json_schema.name");
    EXPECT_EQ(chat_error(named("a.b")).param(), "response_format.json_schema.name");
    EXPECT_EQ(chat_error(R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":[]}})").param(),
              "response_format.json_schema.schema");
    EXPECT_EQ(chat_error(R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{},"x":1}})").param(),
              "response_format.json_schema.x");
    EXPECT_EQ(chat_error(R"("response_format":{"type":"json_object"},"grammar":"root ::= \"a\"")").param(), "grammar");
}

TEST(OpenAIRequest, CompletionPromptAndLogprobs) {
    auto r = parse_request(Endpoint::Completion, R"({"prompt":"Once","logprobs":2})");
    EXPECT_EQ(r.prompt, "Once");
    EXPECT_TRUE(r.options.logprobs);
    EXPECT_EQ(r.options.top_logprobs, 2);
    r = parse_request(Endpoint::Completion, R"({"prompt":["Once"]})");
    EXPECT_EQ(r.prompt, "Once");
    EXPECT_FALSE(r.options.logprobs);
    EXPECT_EQ(error_of(Endpoint::Completion, R"({"prompt":["a","b"]})").param(), "prompt");
    EXPECT_EQ(error_of(Endpoint::Completion, R"({"prompt":"a","logprobs":true})").param(), "logprobs");
    // Chat-only fields are unknown here, and the other way round.
    EXPECT_EQ(error_of(Endpoint::Completion, R"({"prompt":"a","messages":[]})").param(), "messages");
    EXPECT_EQ(error_of(Endpoint::Completion, R"({"prompt":"a","max_completion_tokens":1})").param(), "max_completion_tokens");
    EXPECT_EQ(error_of(Endpoint::Chat, std::string("{") + kUser + R"(,"prompt":"a"})").param(), "prompt");
}

TEST(OpenAIRequest, BodyErrors) {
    EXPECT_EQ(error_of(Endpoint::Chat, "{not json").param(), "");
    EXPECT_NE(std::string(error_of(Endpoint::Chat, "{not json").what()).find("not valid JSON"), std::string::npos);
    EXPECT_NE(std::string(error_of(Endpoint::Chat, "[1]").what()).find("must be a JSON object"), std::string::npos);
    EXPECT_NE(std::string(error_of(Endpoint::Chat, "\"\xff\"").what()).find("not valid JSON"), std::string::npos);
    EXPECT_STREQ(chat_error(R"("temprature":1)").what(), "unknown field 'temprature'");
    EXPECT_EQ(chat_error(R"("temprature":1)").param(), "temprature");
}

TEST(OpenAIRequest, FieldErrorsNameTheField) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"("max_tokens":-1)", "max_tokens"},
        {R"("max_tokens":2147483648)", "max_tokens"},
        {R"("max_tokens":1.5)", "max_tokens"},
        {R"("max_tokens":"10")", "max_tokens"},
        {R"("temperature":2.5)", "temperature"},
        {R"("temperature":true)", "temperature"},
        {R"("top_p":0)", "top_p"},
        {R"("seed":-1)", "seed"},
        {R"("seed":9007199254740992)", "seed"},
        {R"("n":2)", "n"},
        {R"("stop":"")", "stop"},
        {R"("stop":["a","b","c","d","e"])", "stop"},
        {R"("stop":[1])", "stop"},
        {R"("logit_bias":{"x":1})", "logit_bias.x"},
        {R"("logit_bias":{"01":1})", "logit_bias.01"},
        {R"("logit_bias":{"3000000000":1})", "logit_bias.3000000000"},
        {R"("logit_bias":{"12345678901":1})", "logit_bias.12345678901"},
        {R"("logit_bias":{"-1":1})", "logit_bias.-1"},
        {R"("logit_bias":{"":1})", "logit_bias."},
        {R"("logit_bias":{"5":101})", "logit_bias.5"},
        {R"("logit_bias":[])", "logit_bias"},
        {R"("frequency_penalty":3)", "frequency_penalty"},
        {R"("top_logprobs":2)", "top_logprobs"},  // without logprobs: true
        {R"("logprobs":true,"top_logprobs":21)", "top_logprobs"},
        {R"("logprobs":1)", "logprobs"},
        {R"("stream_options":{"include_usage":true})", "stream_options"},  // without stream
        {R"("stream":true,"stream_options":{"x":true})", "stream_options.x"},
        {R"("stream":"yes")", "stream"},
        {R"("top_k":-1)", "top_k"},
        {R"("min_p":1.5)", "min_p"},
        {R"("repeat_penalty":0)", "repeat_penalty"},
        {R"("grammar":"")", "grammar"},
        {R"("model":3)", "model"},
        {R"("user":3)", "user"},
    };
    for (const auto& [fields, param] : cases) {
        const BadRequest e = chat_error(fields);
        EXPECT_EQ(e.param(), param) << fields;
        EXPECT_NE(std::string(e.what()).find("'" + param + "'"), std::string::npos) << e.what();
    }
    EXPECT_STREQ(chat_error(R"("top_p":0)").what(), "'top_p' must be a number in (0, 1]");
    EXPECT_STREQ(chat_error(R"("max_tokens":-1)").what(), "'max_tokens' must be an integer in [0, 2147483647]");
}

TEST(OpenAIRequest, MessageErrors) {
    const auto bad = [](const std::string& messages) { return error_of(Endpoint::Chat, R"({"messages":)" + messages + "}").param(); };
    EXPECT_EQ(bad("[]"), "messages");
    EXPECT_EQ(bad("{}"), "messages");
    EXPECT_EQ(bad("[1]"), "messages[0]");
    EXPECT_EQ(bad(R"([{"role":"function","content":"x"}])"), "messages[0].role");
    EXPECT_EQ(bad(R"([{"role":"tool","content":"x"}])"), "messages[0].tool_call_id");
    EXPECT_EQ(bad(R"([{"role":"user","content":null}])"), "messages[0].content");
    EXPECT_EQ(bad(R"([{"role":"assistant","content":null}])"), "messages[0].content");
    EXPECT_EQ(bad(R"([{"role":"user","content":"x","tool_calls":[]}])"), "messages[0].tool_calls");
    EXPECT_EQ(bad(R"([{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"arguments":"{}"}}]}])"),
              "messages[0].tool_calls[0].function");
    EXPECT_EQ(bad(R"([{"role":"user","content":3}])"), "messages[0].content");
    EXPECT_EQ(bad(R"([{"role":"user","content":"x","name":"n"}])"), "messages[0].name");
    EXPECT_EQ(bad(R"([{"role":"user","content":"x"},{"role":"user","content":[{"type":"image_url","image_url":{}}]}])"),
              "messages[1].content[0]");
    EXPECT_EQ(error_of(Endpoint::Chat, R"({"max_tokens":1})").param(), "messages");
}

// ---------------------------------------------------------------- tools

constexpr const char* kAdd =
    R"({"type":"function","function":{"name":"add","parameters":{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"integer"}},"required":["a","b"]}}})";

TEST(OpenAIRequestTools, ToolsChoiceAndToolMessages) {
    const auto r = parse_request(Endpoint::Chat, std::string(R"({"messages":[{"role":"user","content":"2+3?"},)") +
                                                     R"({"role":"assistant","content":null,"tool_calls":[)" +
                                                     R"({"id":"c1","type":"function","function":{"name":"add","arguments":{"b":3,"a":2}}}]},)" +
                                                     R"({"role":"tool","tool_call_id":"c1","name":"add","content":"5"}],)" +
                                                     R"("tools":[)" + kAdd + R"(],"tool_choice":"required","parallel_tool_calls":false})");
    ASSERT_EQ(r.messages.size(), 3u);
    ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
    EXPECT_EQ(r.messages[1].content, "");
    EXPECT_EQ(r.messages[1].tool_calls[0].id, "c1");
    // An object is sent on as compact JSON in the client's key order, as llama.cpp does.
    EXPECT_EQ(r.messages[1].tool_calls[0].arguments, R"({"b":3,"a":2})");
    EXPECT_EQ(r.messages[2].tool_call_id, "c1");
    EXPECT_EQ(r.messages[2].name, "add");
    ASSERT_EQ(r.tools.tools.size(), 1u);
    EXPECT_EQ(r.tools.tools[0].name, "add");
    EXPECT_EQ(r.tools.tools[0].description, "");
    EXPECT_EQ(r.tools.tools[0].parameters,
              R"({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"integer"}},"required":["a","b"]})");
    EXPECT_EQ(r.tools.choice, smolinfer::ToolChoice::Required);
    EXPECT_EQ(r.tools.parallel, false);

    const auto named = chat(std::string(R"("tools":[)") + kAdd + R"(],"tool_choice":{"type":"function","function":{"name":"add"}})");
    EXPECT_EQ(named.tools.choice, smolinfer::ToolChoice::Named);
    EXPECT_EQ(named.tools.function, "add");
    EXPECT_EQ(chat(std::string(R"("tools":[)") + kAdd + "]").tools.choice, smolinfer::ToolChoice::Auto);
    EXPECT_FALSE(chat(std::string(R"("tools":[)") + kAdd + "]").tools.parallel.has_value());
}

// A bad tool is a 400 whose message names the tool.
TEST(OpenAIRequestTools, BadToolsNameTheTool) {
    const auto message = [](const std::string& fields) {
        const BadRequest e = chat_error(fields);
        EXPECT_EQ(e.param(), "tools") << fields;
        return std::string(e.what());
    };
    const std::string dup = std::string(R"("tools":[)") + kAdd + "," + kAdd + "]";
    EXPECT_NE(message(dup).find("tool 'add' is defined twice"), std::string::npos) << message(dup);
    const std::string refused =
        R"("tools":[{"type":"function","function":{"name":"weird","parameters":{"type":"object","properties":{"x":{"not":{"type":"string"}}}}}}])";
    EXPECT_NE(message(refused).find("tool 'weird'"), std::string::npos) << message(refused);
    EXPECT_NE(message(refused).find("'not'"), std::string::npos) << message(refused);
    const std::string badname = R"("tools":[{"type":"function","function":{"name":"a b"}}])";
    EXPECT_NE(message(badname).find("tool 'a b'"), std::string::npos) << message(badname);
}

TEST(OpenAIRequestTools, ChoiceErrors) {
    const std::string tools = std::string(R"("tools":[)") + kAdd + "]";
    EXPECT_EQ(chat_error(tools + R"(,"tool_choice":"bogus")").param(), "tool_choice");
    EXPECT_EQ(chat_error(tools + R"(,"tool_choice":{"type":"function","function":{"name":"sub"}})").param(),
              "tool_choice.function.name");
    EXPECT_EQ(chat_error(R"("tool_choice":"required")").param(), "tool_choice");
    EXPECT_EQ(chat_error(tools + R"(,"grammar":"root ::= \"x\"")").param(), "grammar");
    EXPECT_EQ(chat_error(tools + R"(,"response_format":{"type":"json_object"})").param(), "response_format");
    EXPECT_EQ(chat_error(tools + R"(,"stream":true,"logprobs":true)").param(), "logprobs");
    // With tool_choice none, tools are only described: a grammar is fine.
    EXPECT_NO_THROW(chat(tools + R"(,"tool_choice":"none","grammar":"root ::= \"x\"")"));
    EXPECT_EQ(chat_error(R"("tools":{})").param(), "tools");
    EXPECT_EQ(chat_error(R"("tools":[{"type":"function","function":{"name":"f","parameters":[]}}])").param(),
              "tools[0].function.parameters");
}

TEST(OpenAIRequestTools, ApplyTemplateTakesAddGenerationPrompt) {
    using smolinfer::server::parse_template_request;
    EXPECT_TRUE(parse_template_request(std::string("{") + kUser + "}").add_generation_prompt);
    EXPECT_FALSE(parse_template_request(std::string("{") + kUser + R"(,"add_generation_prompt":false})").add_generation_prompt);
    EXPECT_THROW(parse_template_request(std::string("{") + kUser + R"(,"add_generation_prompt":1})"), BadRequest);
}

}  // namespace
