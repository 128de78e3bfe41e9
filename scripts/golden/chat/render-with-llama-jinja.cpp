// Renders chat templates with llama.cpp's own Jinja engine (common/jinja),
// the way common/chat.cpp does (common_chat_template_direct_apply): the
// context holds messages, bos_token, eos_token, enable_thinking,
// add_generation_prompt (only when true) and the extra date strings, and
// the clock is fixed so strftime_now is reproducible.
//
// stdin: {"template": TEXT, "now": EPOCH_SECONDS, "context": {...}} per line
// stdout: {"output": TEXT} or {"error": MESSAGE} per line
//
// Built and run by make-chat-golden.mjs; not part of smolinfer.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "jinja/caps.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/runtime.h"
#include "jinja/value.h"
#include "json.h"

// common/json.cpp asserts through ggml; nothing else of ggml is needed.
extern "C" void ggml_abort(const char* file, int line, const char* fmt, ...) {
    std::fprintf(stderr, "abort at %s:%d\n", file, line);
    std::abort();
}

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        const common_json req = common_json::parse(line);
        common_json res = common_json::object();
        try {
            const std::string src = req.at("template").get<std::string>();
            jinja::lexer lexer;
            auto lexed = lexer.tokenize(src);
            jinja::program prog = jinja::parse_from_tokens(lexed);
            jinja::context ctx(lexed.source);
            ctx.current_time = std::time_t(req.at("now").get<int64_t>());
            jinja::global_from_json(ctx, req.at("context"), true);
            jinja::runtime runtime(ctx);
            const jinja::value results = runtime.execute(prog);
            auto parts = jinja::runtime::gather_string_parts(results);
            res["output"] = parts->as_string().str();
        } catch (const std::exception& e) {
            res["error"] = std::string(e.what());
        }
        std::cout << res.dump() << "\n" << std::flush;
    }
    return 0;
}
