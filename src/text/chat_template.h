// Chat prompts. The model's tokenizer.chat_template is recognized, not
// executed: ChatML templates (SmolLM2, Qwen, ...) are rendered natively,
// with the default system message the template itself carries. Template
// markers become control tokens; message text stays plain text even if it
// contains marker strings.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace smolinfer::text {

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

class ChatTemplate {
public:
    // From the model's template text (nullopt if the file has none). An
    // unrecognized or missing template falls back to ChatML; `warning` then
    // says so.
    static ChatTemplate from_template(std::optional<std::string_view> source, std::string* warning);

    const std::string& name() const { return name_; }
    const std::string& default_system() const { return default_system_; }

    // The conversation as prompt pieces, ending with the assistant's turn
    // opener when add_generation_prompt. Throws smolinfer::Error for an
    // unknown role or an empty conversation.
    std::vector<PromptPiece> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

private:
    std::string name_ = "chatml";
    std::string default_system_;
};

}  // namespace smolinfer::text
