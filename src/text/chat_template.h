// Chat prompts. The model's tokenizer.chat_template runs in smolinfer's
// Jinja interpreter (text/jinja/) with the context llama.cpp gives it
// (messages, add_generation_prompt, bos_token, eos_token, enable_thinking,
// date strings, strftime_now). A template the interpreter cannot run, or
// none, falls back to ChatML with a warning. Template markup becomes control
// tokens; message text stays plain text even if it contains marker strings.
#pragma once

#include <ctime>
#include <memory>
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

namespace jinja {
class Template;
}

// The texts of the vocabulary's BOS and EOS tokens, as templates see them.
struct ChatTokens {
    std::string bos;
    std::string eos;
};

class ChatTemplate {
public:
    // From the model's template text (nullopt if the file has none). A
    // missing template, or one using a construct the interpreter lacks,
    // falls back to ChatML; `warning` then says so (naming the construct).
    static ChatTemplate from_template(std::optional<std::string_view> source, std::string* warning,
                                      const ChatTokens& tokens = {});

    const std::string& name() const { return name_; }
    const std::string& default_system() const { return default_system_; }

    // The conversation as prompt pieces, ending with the assistant's turn
    // opener when add_generation_prompt. Throws smolinfer::Error for an
    // unknown role, an empty conversation, or a template that fails (its
    // raise_exception message, or what went wrong). `now` is the moment the
    // template's dates show (UTC); the first overload uses the clock.
    std::vector<PromptPiece> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
    std::vector<PromptPiece> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                    std::time_t now) const;

    // Whether the model's template runs (false: the ChatML fallback).
    bool executes_template() const { return program_ != nullptr; }
    // Whether the file has a template at all (a base model has none).
    bool present() const { return present_; }

private:
    std::vector<PromptPiece> render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

    std::string name_ = "chatml";
    std::string default_system_;
    std::shared_ptr<const jinja::Template> program_;
    ChatTokens tokens_;
    bool present_ = false;
};

}  // namespace smolinfer::text
