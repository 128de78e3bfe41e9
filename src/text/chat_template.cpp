#include "text/chat_template.h"

#include "smolinfer/error.h"

namespace smolinfer::text {

namespace {

// The text of a literal '<|im_start|>system\n...<|im_end|>' inside the
// template: the system message it inserts when the conversation has none.
// Templates write the newline either raw or as the two characters "\n".
std::string find_default_system(std::string_view tpl) {
    for (const std::string_view opener : {std::string_view("<|im_start|>system\n"), std::string_view("<|im_start|>system\\n")}) {
        for (size_t at = tpl.find(opener); at != std::string_view::npos; at = tpl.find(opener, at + 1)) {
            const size_t begin = at + opener.size();
            const size_t end = tpl.find("<|im_end|>", begin);
            if (end == std::string_view::npos) break;
            const std::string_view text = tpl.substr(begin, end - begin);
            // A Jinja expression here (e.g. messages[0]['content']) is not a default.
            const bool literal = text.find("{{") == std::string_view::npos && text.find("{%") == std::string_view::npos &&
                                 text.find('\'') == std::string_view::npos && text.find('"') == std::string_view::npos;
            if (literal && !text.empty()) return std::string(text);
        }
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
