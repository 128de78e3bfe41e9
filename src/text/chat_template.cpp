#include "text/chat_template.h"

#include <optional>

#include "smolinfer/error.h"

namespace smolinfer::text {

namespace {

// The Jinja string literal that starts at tpl[open] (a quote character), with
// its escapes processed; nullopt if it does not close.
std::optional<std::string> string_literal(std::string_view tpl, size_t open) {
    const char quote = tpl[open];
    std::string out;
    for (size_t i = open + 1; i < tpl.size(); ++i) {
        const char c = tpl[i];
        if (c == quote) return out;
        if (c != '\\' || i + 1 == tpl.size()) {
            out += c;
            continue;
        }
        switch (const char e = tpl[++i]) {
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            default: out += e; break;  // \\, \', \" and anything else: the character itself
        }
    }
    return std::nullopt;
}

// The system message the template inserts when the conversation has none:
// a string literal '<|im_start|>system\n...<|im_end|>...' in the template.
// (A block built from an expression, like messages[0]['content'], is not a
// literal and is skipped.)
std::string find_default_system(std::string_view tpl) {
    constexpr std::string_view kOpener = "<|im_start|>system\n";
    constexpr std::string_view kCloser = "<|im_end|>";
    for (size_t at = tpl.find("<|im_start|>system"); at != std::string_view::npos;
         at = tpl.find("<|im_start|>system", at + 1)) {
        if (at == 0 || (tpl[at - 1] != '\'' && tpl[at - 1] != '"')) continue;
        const auto literal = string_literal(tpl, at - 1);
        if (!literal || literal->rfind(kOpener, 0) != 0) continue;
        const size_t end = literal->find(kCloser);
        if (end == std::string::npos || end == kOpener.size()) continue;
        return literal->substr(kOpener.size(), end - kOpener.size());
    }
    return {};
}

}  // namespace

ChatTemplate ChatTemplate::from_template(std::optional<std::string_view> source, std::string* warning) {
    ChatTemplate t;
    if (!source) {
        if (warning) *warning = "the model has no chat template (tokenizer.chat_template); using ChatML";
        return t;
    }
    if (source->find("<|im_start|>") == std::string_view::npos) {
        if (warning) *warning = "unrecognized chat template (tokenizer.chat_template); using ChatML";
        return t;
    }
    t.default_system_ = find_default_system(*source);
    return t;
}

std::vector<PromptPiece> ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
    if (messages.empty()) throw Error("chat: no messages");
    std::vector<PromptPiece> pieces;
    auto markup = [&](std::string s) { pieces.push_back(PromptPiece{std::move(s), true}); };
    auto content = [&](const std::string& s) { pieces.push_back(PromptPiece{s, false}); };

    if (messages.front().role != "system" && !default_system_.empty()) {
        markup("<|im_start|>system\n" + default_system_ + "<|im_end|>\n");
    }
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role != "system" && m.role != "user" && m.role != "assistant") {
            throw Error("chat: message " + std::to_string(i) + " has role '" + m.role +
                        "' (expected system, user or assistant)");
        }
        markup("<|im_start|>" + m.role + "\n");
        content(m.content);
        markup("<|im_end|>\n");
    }
    if (add_generation_prompt) markup("<|im_start|>assistant\n");
    return pieces;
}

}  // namespace smolinfer::text
