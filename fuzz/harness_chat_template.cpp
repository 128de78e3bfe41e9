// fuzz_chat_template: a conversation (and sometimes the template text) from
// bytes -> ChatTemplate -> prompt pieces -> token ids (see harness.h).
#include <optional>
#include <string>
#include <vector>

#include "harness.h"
#include "input.h"
#include "smolinfer/error.h"
#include "support/tiny_model.h"
#include "text/chat_template.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "utf8.h"

namespace smolinfer::fuzz {

namespace {

// tokenizer.chat_template of SmolLM2-135M-Instruct, as in the GGUF.
constexpr std::string_view kSmolLM2Template =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' "
    "+ message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\n' }}{% endif %}";

// Llama 3's turn layout, not ChatML: the interpreter runs it too.
constexpr std::string_view kLlama3 =
    "{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + "
    "message['content'] + '<|eot_id|>' }}{% endfor %}";

size_t count(std::string_view haystack, std::string_view needle) {
    size_t n = 0;
    for (size_t at = haystack.find(needle); at != std::string_view::npos; at = haystack.find(needle, at + needle.size())) {
        ++n;
    }
    return n;
}

}  // namespace

void chat_template_one(Bytes data) {
    Input in(data);
    const auto flags = in.take<uint8_t>();
    const bool add_generation_prompt = (flags & 4) != 0;
    std::optional<std::string_view> source;
    switch (flags & 3) {
        case 0: source = kSmolLM2Template; break;
        case 1: source = std::nullopt; break;
        case 2: source = kLlama3; break;
        case 3: source = in.take_until(0); break;
    }
    std::string warning;
    const text::ChatTemplate tpl = text::ChatTemplate::from_template(source, &warning);
    // Templates from the input may be anything: only crashes, hangs and
    // non-smolinfer exceptions count there.
    const bool known_template = (flags & 3) != 3;
    if (known_template) check(warning.empty() == source.has_value(), "a warning exactly when there is no template");

    // The rest: role, content, role, content, ... separated by NUL bytes. A
    // one-byte role picks system/user/assistant/tool or an invalid "narrator";
    // longer ones are used as they are.
    std::vector<text::ChatMessage> messages;
    bool roles_ok = true;
    while (!in.empty() && messages.size() < 64) {
        std::string role(in.take_until(0));
        if (role.size() == 1) {
            static const char* kRoles[] = {"system", "user", "assistant", "tool", "narrator"};
            role = kRoles[uint8_t(role[0]) % 5];
        }
        roles_ok = roles_ok && (role == "system" || role == "user" || role == "assistant" || role == "tool");
        messages.push_back({role, std::string(in.take_until(0))});
    }

    std::vector<text::PromptPiece> pieces;
    try {
        pieces = tpl.render(messages, add_generation_prompt);
    } catch (const Error&) {
        check(!known_template || messages.empty() || !roles_ok, "render rejected a valid conversation");
        return;
    }
    check(!messages.empty() && roles_ok, "render accepted an invalid conversation");
    if (!known_template) return;

    // Message contents appear unchanged, in order, as plain text; only the
    // template's own markup may hold control tokens.
    const text::Vocab& vocab = test::tiny_vocab();
    std::vector<std::string> contents;
    std::string all_text;
    size_t markup_specials = 0;
    for (const text::PromptPiece& p : pieces) {
        check(!p.is_token, "the renderer places no token ids");
        all_text += p.text;
        if (!p.parse_special) {
            contents.push_back(p.text);
            continue;
        }
        for (const text::TokenId id : vocab.special_tokens()) markup_specials += count(p.text, vocab.text(id));
    }
    check(contents.size() == messages.size(), "one plain-text piece per message");
    for (size_t i = 0; i < contents.size(); ++i) check(contents[i] == messages[i].content, "content changed");

    const text::Tokenizer tok(vocab);
    const std::vector<text::TokenId> ids = tok.encode_pieces(pieces, true);
    size_t specials = 0;
    for (const text::TokenId id : ids) {
        check(vocab.valid(id), "token id out of range");
        if (vocab.kind(id) == text::TokenKind::Control) ++specials;
    }
    check(specials == markup_specials, "message text turned into control tokens");
    if (valid_utf8(all_text)) {
        check(text::detokenize(vocab, ids, true) == all_text, "the rendered prompt does not detokenize to its text");
    }
}

}  // namespace smolinfer::fuzz
