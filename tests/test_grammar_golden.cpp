// Grammar-constrained greedy generation against llama.cpp: for each grammar
// of tests/golden/grammar/ (written by scripts/golden/make-grammar-golden.mjs
// with node-llama-cpp's LlamaGrammar on the real SmolLM2 Q4_1 model) our
// tokens equal llama.cpp's, and the generation ends the same way. Also the
// session-level contract: a bad grammar throws before anything is
// evaluated; a grammar that admits no token stops with GrammarExhausted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "grammar/matcher.h"
#include "grammar/vocab_tokens.h"
#include "runtime/file_bytes.h"
#include "runtime/sha256.h"
#include "smolinfer/session.h"
#include "support/paths.h"
#include "text/detokenizer.h"
#include "text/vocab.h"

namespace smolinfer {
namespace {

// tests/golden/grammar/<name>.json, as scripts/golden/make-grammar-golden.mjs names them.
const std::vector<std::string>& golden_names() {
    static const std::vector<std::string> names = {
        "accents", "any_char", "arithmetic", "chess", "cyrillic", "email", "emoji", "enum_sentence", "escapes",
        "japanese", "json", "json_arr", "key_values", "list", "nested", "numbers", "repetition", "shared_prefix",
        "yes_no"};
    return names;
}

// The golden text is node-llama-cpp's UTF-8 decoding of the tokens, which
// writes U+FFFD for a character the last token leaves unfinished; ours keeps
// those bytes. Equal where both are whole, and ours ends in 1-3 bytes of a
// character where the golden text ends in U+FFFD.
void expect_same_text(const std::string& ours, const std::string& golden, const std::string& name) {
    const std::string replacement = "\xEF\xBF\xBD";
    if (!golden.ends_with(replacement) || ours.ends_with(replacement)) {
        EXPECT_EQ(ours, golden) << name;
        return;
    }
    const std::string whole = golden.substr(0, golden.size() - replacement.size());
    ASSERT_TRUE(ours.starts_with(whole)) << name << ": ours \"" << ours << "\", llama.cpp \"" << golden << "\"";
    const std::string tail = ours.substr(whole.size());
    EXPECT_TRUE(!tail.empty() && tail.size() < 4 && (uint8_t(tail[0]) & 0xC0) == 0xC0)
        << name << ": ours ends in " << tail.size() << " bytes that are not the start of a character";
}

// The model's vocabulary as the grammar sees it (the table generate() uses).
std::shared_ptr<const grammar::TokenTable> smollm2_tokens() {
    static const std::shared_ptr<const grammar::TokenTable> table = [] {
        const auto bytes = runtime::FileBytes::map(test::model_path());
        const gguf::File file = gguf::File::parse(bytes->bytes());
        const text::Vocab vocab = text::Vocab::from_metadata(file.metadata());
        return grammar::vocab_token_table(vocab);
    }();
    return table;
}

// The grammar parity proper, independent of the model's arithmetic: at every
// position of llama.cpp's output, our allowed-token set is llama.cpp's
// (its grammar sampler asked about every token; stored as count + sha256
// of the bitset, and the ids when few).
TEST(GrammarGoldenTokens, AllowedSetsEqualLlamaCppAtEveryPosition) {
    const auto tokens = smollm2_tokens();
    for (const std::string& name : golden_names()) {
        const nlohmann::json g = test::load_golden("grammar/" + name + ".json");
        ASSERT_EQ(g["vocab_size"].get<size_t>(), tokens->size()) << name;
        grammar::Matcher m(grammar::parse_grammar(g["grammar"].get<std::string>()), tokens);
        const auto ids = g["ids"].get<std::vector<int32_t>>();
        const auto& sets = g["allowed"];
        ASSERT_EQ(sets.size(), ids.size()) << name;
        for (size_t k = 0; k < ids.size(); ++k) {
            const auto bits = m.allowed(true);
            std::vector<uint8_t> bytes((tokens->size() + 7) / 8, 0);
            std::vector<int32_t> ours;
            for (size_t id = 0; id < tokens->size(); ++id) {
                if ((bits[id / 64] >> (id % 64)) & 1) {
                    bytes[id / 8] |= uint8_t(1u << (id % 8));
                    ours.push_back(int32_t(id));
                }
            }
            const auto& theirs = sets[k];
            if (!theirs["ids"].is_null()) {
                ASSERT_EQ(ours, theirs["ids"].get<std::vector<int32_t>>()) << name << " position " << k;
            }
            ASSERT_EQ(ours.size(), theirs["count"].get<size_t>()) << name << " position " << k;
            runtime::Sha256 h;
            h.update(bytes);
            ASSERT_EQ(h.finish_hex(), theirs["sha256"].get<std::string>()) << name << " position " << k;
            m.accept(ids[k]);
        }
    }
}

class GrammarGolden : public ::testing::Test {
protected:
    static Session& session() {
        if (!session_) {
            SessionOptions o;
            o.context = 1024;
            o.exact = !test::fast_arithmetic();
            // scripts/golden/make-grammar-golden.mjs runs llama.cpp with flash attention off.
            o.flash_attention = FlashAttention::Off;
            session_ = Session::open_file(test::model_path(), o);
        }
        return *session_;
    }
    static void TearDownTestSuite() { session_.reset(); }

    static GenerateOptions greedy(int max_tokens, const std::string& grammar) {
        GenerateOptions g;
        g.max_tokens = max_tokens;
        g.sampling.temperature = 0.0f;
        g.grammar = grammar;
        return g;
    }

    static std::unique_ptr<Session> session_;
};

std::unique_ptr<Session> GrammarGolden::session_;

// The real generate() loop: llama.cpp's tokens exactly. The goldens come
// from llama.cpp's AVX-512 ("zen4") CPU backend (source.cpu_backend), whose
// arithmetic ours reproduces. Only the plain WebAssembly build's fast
// arithmetic may part from them, and only where llama.cpp's best allowed
// tokens were close (test_golden_generation.cpp: up to 0.72 nats).
TEST_F(GrammarGolden, GreedyTokensEqualLlamaCpp) {
    const bool exact = !test::fast_arithmetic();
    Session& s = session();
    for (const std::string& name : golden_names()) {
        const nlohmann::json g = test::load_golden("grammar/" + name + ".json");
        const auto prompt = g["prompt_ids"].get<std::vector<TokenId>>();
        std::vector<TokenId> expected = g["ids"].get<std::vector<TokenId>>();
        const bool eog = g["stopped_at_eog"].get<bool>();
        if (eog) {
            ASSERT_FALSE(expected.empty()) << name;
            EXPECT_TRUE(s.is_end_of_generation(expected.back())) << name;
            expected.pop_back();  // our tokens leave the end-of-generation token out
        }
        const GenerationStats st = s.generate(prompt, greedy(g["max_tokens"].get<int>(), g["grammar"]), nullptr);
        if (st.tokens == expected && (st.stop == StopReason::EndOfGeneration) == eog) {
            expect_same_text(s.detokenize(st.tokens), g["text"].get<std::string>(), name);
            EXPECT_EQ(st.stop, eog ? StopReason::EndOfGeneration : StopReason::MaxTokens) << name;
            continue;
        }
        size_t k = 0;
        while (k < st.tokens.size() && k < expected.size() && st.tokens[k] == expected[k]) ++k;
        if (exact) {
            ADD_FAILURE() << name << " parts from llama.cpp at token " << k << ": ours \"" << s.detokenize(st.tokens)
                          << "\" llama.cpp \"" << g["text"].get<std::string>() << "\"";
            continue;
        }
        const auto& top = g["top_allowed"][k];
        const TokenId ours = k < st.tokens.size() ? st.tokens[k] : -1;  // -1: we ended (end-of-generation)
        double gap = 1e9;
        for (const auto& pair : top) {
            const TokenId id = pair[0];
            if (id == ours || (ours == -1 && s.is_end_of_generation(id))) gap = top[0][1].get<double>() - pair[1].get<double>();
        }
        if (gap == 1e9 && ours >= 0) {
            // Not among the few allowed tokens the golden lists (where many
            // are about as likely): how far apart the two choices are in our
            // own logits, re-evaluated as one batch.
            std::vector<TokenId> upto = prompt;
            upto.insert(upto.end(), expected.begin(), expected.begin() + ptrdiff_t(k));
            s.reset();
            const auto logits = s.evaluate(upto, false);
            gap = std::abs(double(logits[size_t(ours)]) - double(logits[size_t(expected[k])]));
        }
        EXPECT_LT(gap, 0.75) << name << " diverges at token " << k << " (ours " << ours << ", llama.cpp "
                                 << g["ids"][k] << "): not close among llama.cpp's allowed tokens; ours \""
                                 << s.detokenize(st.tokens) << "\" llama.cpp \"" << g["text"].get<std::string>() << "\"";
        std::printf("%s diverges at token %zu, where llama.cpp's allowed tokens were %.4f apart\n", name.c_str(), k, gap);
    }
}

TEST_F(GrammarGolden, BadGrammarThrowsBeforeEvaluating) {
    Session& s = session();
    s.reset();
    const auto prompt = s.tokenize("Hello");
    try {
        s.start(prompt, greedy(4, "root ::= item\nitem ::= [a-"));
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "grammar: line 2, column 10: unterminated character class");
    }
    EXPECT_TRUE(s.sequence().empty());
}

TEST_F(GrammarGolden, GrammarAdmittingNoTokenStops) {
    Session& s = session();
    // A NUL character: no token's piece can provide it.
    const GenerationStats st = s.generate(s.tokenize("Hello"), greedy(8, "root ::= \"\\x00\""), nullptr);
    EXPECT_EQ(st.stop, StopReason::GrammarExhausted);
    EXPECT_TRUE(st.tokens.empty());
    EXPECT_STREQ(stop_reason_name(st.stop), "grammar");
}

TEST_F(GrammarGolden, CompleteGrammarWithIgnoreEosStops) {
    Session& s = session();
    GenerateOptions g = greedy(8, "root ::= \"Hi\"");
    g.ignore_eos = true;
    const GenerationStats st = s.generate(s.tokenize("Hello"), g, nullptr);
    EXPECT_EQ(s.detokenize(st.tokens), "Hi");
    EXPECT_EQ(st.stop, StopReason::GrammarExhausted);
}

// A lazy grammar (grammar_triggers, llama.cpp's lazy grammars): the output
// is free, the same as unconstrained, until the trigger appears; from the
// trigger's start on it follows the grammar.
TEST_F(GrammarGolden, LazyGrammarConstrainsFromItsTrigger) {
    Session& s = session();
    s.reset();
    const auto prompt = s.tokenize("<|im_start|>user\nTell me about the sea.<|im_end|>\n<|im_start|>assistant\n");
    const GenerationStats free = s.generate(prompt, greedy(24, ""), nullptr);
    ASSERT_GE(free.tokens.size(), 6u);
    // The trigger: the text of free tokens 3..4, which starts at a token boundary.
    const std::string before = s.detokenize(std::span(free.tokens).first(3));
    const std::string trigger = s.detokenize(std::span(free.tokens).subspan(3, 2));
    ASSERT_EQ(s.detokenize(free.tokens).find(trigger), before.size()) << trigger;
    std::string literal;
    for (char c : trigger) {
        if (c == '"' || c == '\\') literal += '\\';
        literal += c == '\n' ? std::string("\\n") : std::string(1, c);
    }
    GenerateOptions lazy = greedy(24, "root ::= \"" + literal + "\" \" zzz\" [.]{3}");
    lazy.grammar_triggers = {trigger};
    s.reset();
    const GenerationStats st = s.generate(prompt, lazy, nullptr);
    EXPECT_EQ(s.detokenize(st.tokens), before + trigger + " zzz...");
    // Complete: end of generation is allowed, and nothing else.
    EXPECT_TRUE(st.stop == StopReason::EndOfGeneration || st.stop == StopReason::GrammarExhausted);

    // From an empty cache, as the free run: the plain WebAssembly build's
    // fast arithmetic may part a prompt re-read from the cache from one
    // prefilled in a batch.
    s.reset();
    GenerateOptions never = greedy(24, "root ::= \"x\"");
    never.grammar_triggers = {"\x01never"};
    EXPECT_EQ(s.detokenize(s.generate(prompt, never, nullptr).tokens), s.detokenize(free.tokens));
    GenerateOptions no_grammar = greedy(4, "");
    no_grammar.grammar_triggers = {"a"};
    EXPECT_THROW(s.generate(prompt, no_grammar, nullptr), Error);
}

}  // namespace
}  // namespace smolinfer
