#include "text/vocab.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <variant>

#include "gguf/gguf.h"
#include "smolinfer/error.h"

namespace smolinfer::text {

namespace {

// Unambiguous key for a pair of strings that may themselves contain spaces.
std::string merge_key(std::string_view left, std::string_view right) {
    std::string key = std::to_string(left.size());
    key += ':';
    key += left;
    key += right;
    return key;
}

// Token texts llama.cpp's llama_vocab::load treats as end-of-generation
// control tokens whatever the file's token types say (it finds them by text).
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",  // <｜end▁of▁sentence｜>
    "[e~[",
};

// Fill-in-the-middle tokens, found by text when the file names none: they
// become control tokens; pad, repo and file-separator ones also end generation.
struct FimKind {
    const char* key;
    bool ends_generation;
    std::array<std::string_view, 8> texts;  // unused slots empty
};
constexpr FimKind kFimKinds[] = {
    {"tokenizer.ggml.fim_pre_token_id", false,
     {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
      "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}},
    {"tokenizer.ggml.fim_suf_token_id", false,
     {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>", "<SUF>",
      "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}},
    {"tokenizer.ggml.fim_mid_token_id", false,
     {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
      "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}},
    {"tokenizer.ggml.fim_pad_token_id", true, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
    {"tokenizer.ggml.fim_rep_token_id", true,
     {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
    {"tokenizer.ggml.fim_sep_token_id", true, {"<|file_sep|>"}},
};

// gpt-oss's message-structure tokens are always rendered (llama.cpp's hack).
constexpr std::string_view kAlwaysRenderedTexts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

}  // namespace

std::optional<TokenId> Vocab::find(std::string_view text) const {
    auto it = ids_.find(std::string(text));
    if (it == ids_.end()) return std::nullopt;
    return it->second;
}

int Vocab::merge_rank(std::string_view left, std::string_view right) const {
    auto it = merge_ranks_.find(merge_key(left, right));
    return it == merge_ranks_.end() ? -1 : it->second;
}

TokenId Vocab::byte_fallback(uint8_t byte) const {
    static constexpr char kHex[] = "0123456789ABCDEF";
    const char hex[6] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
    if (auto id = find(std::string_view(hex, 6))) return *id;
    const char raw = char(byte);
    if (auto id = find(std::string_view(&raw, 1))) return *id;
    throw Error("the vocabulary has no token for byte 0x" + std::string(hex + 3, 2) + " (neither '<0x" +
                std::string(hex + 3, 2) + ">' nor the byte itself), which SentencePiece needs for its byte fallback");
}

void Vocab::read_bpe_merges(const gguf::Metadata& md) {
    const auto merges = md.get_string_array("tokenizer.ggml.merges");
    if (!merges) throw Error("missing metadata 'tokenizer.ggml.merges'");
    merge_ranks_.reserve(merges->size());
    for (size_t r = 0; r < merges->size(); ++r) {
        const std::string_view m = (*merges)[r];
        const size_t sp = m.find(' ', 1);
        if (sp == std::string_view::npos) {
            throw Error("bad metadata: merge " + std::to_string(r) + " of 'tokenizer.ggml.merges' has no space");
        }
        merge_ranks_.emplace(merge_key(m.substr(0, sp), m.substr(sp + 1)), int(r));
    }
}

void Vocab::read_scores(const gguf::Metadata& md) {
    const char* key = "tokenizer.ggml.scores";
    const gguf::Value* v = md.find(key);
    if (v == nullptr) return;  // llama.cpp scores every token 0
    if (v->type != gguf::ValueType::Array ||
        (v->elem_type != gguf::ValueType::F32 && v->elem_type != gguf::ValueType::I32)) {
        throw Error("bad metadata: '" + std::string(key) + "' must be an array of f32 or i32");
    }
    if (v->count < texts_.size()) {
        throw Error("bad metadata: '" + std::string(key) + "' has " + std::to_string(v->count) + " entries for " +
                    std::to_string(texts_.size()) + " tokens");
    }
    scores_.resize(texts_.size());
    for (size_t i = 0; i < scores_.size(); ++i) {
        const gguf::Scalar s = v->item(i);
        if (const auto* d = std::get_if<double>(&s)) {
            scores_[i] = float(*d);
        } else {
            scores_[i] = float(std::get<int64_t>(s));
        }
    }
}

// llama.cpp gives Phi-3's special tokens rstrip by the model's name (the
// file has no per-token attributes): text after them loses its leading
// whitespace, except after <unk>, <s> and <|endoftext|>.
void Vocab::set_strip_flags(const gguf::Metadata& md) {
    std::string name(md.get_string("general.name").value_or(""));
    std::transform(name.begin(), name.end(), name.begin(), [](char c) { return char(std::tolower(uint8_t(c))); });
    if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
    rstrip_.insert(specials_.begin(), specials_.end());
    if (auto id = find("</s>")) rstrip_.insert(*id);
    for (const std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) {
        if (auto id = find(t)) rstrip_.erase(*id);
    }
}

// llama.cpp's text-based special-token rules, in its order (see the
// tables above).
void Vocab::mark_special_texts(const gguf::Metadata& md, std::optional<TokenId> eot) {
    for (const FimKind& fim : kFimKinds) {
        if (const auto id = md.get_int(fim.key)) {
            if (fim.ends_generation && *id >= 0 && size_t(*id) < size()) eog_.insert(TokenId(*id));
            continue;
        }
        for (const std::string_view t : fim.texts) {
            if (t.empty()) continue;
            if (auto id = find(t)) {
                kinds_[size_t(*id)] = TokenKind::Control;
                if (fim.ends_generation) eog_.insert(*id);
            }
        }
    }
    for (const std::string_view t : kEndOfGenerationTexts) {
        if (auto id = find(t)) {
            eog_.insert(*id);
            kinds_[size_t(*id)] = TokenKind::Control;
        }
    }
    for (const std::string_view t : kAlwaysRenderedTexts) {
        if (auto id = find(t)) kinds_[size_t(*id)] = TokenKind::UserDefined;
    }
    if (eos_) eog_.insert(*eos_);
    if (eot) eog_.insert(*eot);

    // Vocabularies where <|end|> ends a message but not the generation
    // (o200k_harmony, solar-open): it is rendered text, not end-of-generation.
    auto eog_text = [&](std::string_view t) -> std::optional<TokenId> {
        auto id = find(t);
        return (id && eog_.count(*id)) ? id : std::nullopt;
    };
    const auto end = eog_text("<|end|>");
    const bool call = eog_text("<|call|>") || eog_text("<|calls|>");
    if (end && call && (eog_text("<|return|>") || eog_text("<|flush|>"))) {
        eog_.erase(*end);
        kinds_[size_t(*end)] = TokenKind::UserDefined;
    }
    // Gemma 4 and PaddleOCR: </s> is ordinary text where <|tool_response> exists.
    if (const auto s = eog_text("</s>"); s && eog_text("<|tool_response>")) {
        eog_.erase(*s);
        kinds_[size_t(*s)] = TokenKind::Normal;
    }
}

// llama.cpp's "bert" defaults are BERT's own ids ([UNK] 100, [CLS] 101 as
// BOS, [SEP] 102), each replaced by the file's key when it has one; a default
// outside the vocabulary is dropped there and tokenizing then aborts, so here
// the file is refused instead. llama.cpp never reads cls_token_id.
void Vocab::read_wordpiece(const gguf::Metadata& md, std::optional<TokenId> sep, std::optional<TokenId> unk) {
    auto required = [&](std::optional<TokenId> from_file, const char* key, TokenId fallback, const char* what) {
        if (from_file) return *from_file;
        if (size_t(fallback) < size()) return fallback;
        throw Error("bad metadata: the bert vocabulary has no " + std::string(what) + " token: no '" + key +
                    "' and the default id " + std::to_string(fallback) + " is outside its " + std::to_string(size()) +
                    " tokens");
    };
    bos_ = required(bos_, "tokenizer.ggml.bos_token_id", 101, "[CLS]");
    sep_ = required(sep, "tokenizer.ggml.seperator_token_id", 102, "[SEP]");  // sic: llama.cpp's spelling
    unk_ = required(unk, "tokenizer.ggml.unknown_token_id", 100, "[UNK]");
    // BertNormalizer's options; strip_accents follows lowercase unless set.
    lowercase_ = md.get_bool("tokenizer.ggml.normalizer.lowercase").value_or(true);
    strip_accents_ = md.get_bool("tokenizer.ggml.normalizer.strip_accents").value_or(lowercase_);
    for (const std::string& t : texts_) max_token_len_ = std::max(max_token_len_, t.size());
}

namespace {
// A string's heap block, if it is too long for the small-string buffer.
size_t heap_of(const std::string& t) { return t.capacity() > 15 ? t.capacity() + 1 : 0; }
// A hash node: the value, the next pointer and the cached hash; plus a bucket pointer.
template <class Map>
size_t table_bytes(const Map& m, size_t value_bytes) {
    return m.bucket_count() * sizeof(void*) + m.size() * (value_bytes + 2 * sizeof(void*));
}
}  // namespace

size_t Vocab::memory_bytes() const {
    size_t bytes = texts_.capacity() * sizeof(std::string) + scores_.capacity() * sizeof(float) +
                   kinds_.capacity() * sizeof(TokenKind) + specials_.capacity() * sizeof(TokenId);
    for (const std::string& t : texts_) bytes += heap_of(t);
    bytes += table_bytes(ids_, sizeof(std::pair<const std::string, TokenId>));
    for (const auto& [k, v] : ids_) bytes += heap_of(k);
    bytes += table_bytes(merge_ranks_, sizeof(std::pair<const std::string, int>));
    for (const auto& [k, v] : merge_ranks_) bytes += heap_of(k);
    bytes += table_bytes(eog_, sizeof(TokenId)) + table_bytes(lstrip_, sizeof(TokenId)) + table_bytes(rstrip_, sizeof(TokenId));
    return bytes;
}

Vocab Vocab::from_metadata(const gguf::Metadata& md, std::vector<std::string>* warnings) {
    Vocab v;
    const auto model = md.get_string("tokenizer.ggml.model");
    if (!model) throw Error("missing metadata 'tokenizer.ggml.model'");
    if (*model == "gpt2") {
        v.model_ = TokenizerModel::Bpe;
    } else if (*model == "llama") {
        v.model_ = TokenizerModel::SentencePiece;
    } else if (*model == "bert") {
        v.model_ = TokenizerModel::WordPiece;
    } else {
        throw Error("unsupported tokenizer.ggml.model " + gguf::quoted(*model) +
                    " (supported: gpt2 = byte-level BPE, llama = SentencePiece, bert = WordPiece)");
    }

    const auto tokens = md.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) throw Error("missing metadata 'tokenizer.ggml.tokens'");
    if (tokens->empty()) throw Error("bad metadata: 'tokenizer.ggml.tokens' is empty");
    if (tokens->size() > size_t(INT32_MAX)) throw Error("bad metadata: 'tokenizer.ggml.tokens' is too large");
    const size_t n = tokens->size();

    std::vector<int64_t> types(n, int64_t(TokenKind::Normal));
    if (auto t = md.get_int_array("tokenizer.ggml.token_type")) {
        if (t->size() != n) {
            throw Error("bad metadata: 'tokenizer.ggml.token_type' has " + std::to_string(t->size()) +
                        " entries for " + std::to_string(n) + " tokens");
        }
        types = std::move(*t);
    }

    v.texts_.reserve(n);
    v.kinds_.reserve(n);
    v.ids_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        v.texts_.emplace_back((*tokens)[i]);
        const int64_t k = types[i];
        v.kinds_.push_back((k >= 0 && k <= 6) ? TokenKind(k) : TokenKind::Undefined);
        // A repeated text keeps its last id, as in llama.cpp's token map.
        v.ids_[v.texts_.back()] = TokenId(i);
    }
    v.read_scores(md);

    // Defaults as llama.cpp's llama_vocab::load sets them per model (and, for
    // BPE, per pre-tokenizer); the metadata flags below override them.
    bool add_bos = false;
    if (v.model_ == TokenizerModel::Bpe) {
        v.read_bpe_merges(md);
        PreTokenizerInfo info{PreTokenizer::Default};
        const auto pre = md.get_string("tokenizer.ggml.pre");
        if (!pre) {
            if (warnings) warnings->push_back("no tokenizer.ggml.pre in the file; using the 'default' pre-tokenizer");
        } else {
            const auto known = pretokenizer_info(*pre);
            if (!known) {
                throw Error("unsupported pre-tokenizer " + gguf::quoted(*pre) + " (tokenizer.ggml.pre; supported: " +
                            supported_pretokenizer_names() + ")");
            }
            info = *known;
        }
        v.pre_ = info.kind;
        v.ignore_merges_ = info.ignore_merges;
        v.clean_spaces_ = info.clean_spaces;
        add_bos = info.add_bos;
    } else if (v.model_ == TokenizerModel::SentencePiece) {
        // SentencePiece has no pre-tokenizer; tokenizer.ggml.pre is ignored, as in llama.cpp.
        v.add_space_prefix_ = true;
        add_bos = true;
    } else {
        // WordPiece ignores tokenizer.ggml.pre too ("bert-bge", ...); its
        // add_bos only matters to what the vocabulary reports: tokenizing
        // adds [CLS] and [SEP] whatever the add_* keys say.
        v.clean_spaces_ = true;
        add_bos = true;
    }
    v.add_space_prefix_ = md.get_bool("tokenizer.ggml.add_space_prefix").value_or(v.add_space_prefix_);

    auto special_id = [&](const char* key) -> std::optional<TokenId> {
        const auto id = md.get_int(key);
        if (!id) return std::nullopt;
        if (*id < 0 || size_t(*id) >= n) {
            throw Error("bad metadata: '" + std::string(key) + "' = " + std::to_string(*id) +
                        " is not a token id (vocabulary of " + std::to_string(n) + ")");
        }
        return TokenId(*id);
    };
    v.bos_ = special_id("tokenizer.ggml.bos_token_id");
    v.eos_ = special_id("tokenizer.ggml.eos_token_id");
    if (v.model_ == TokenizerModel::SentencePiece) {
        // llama.cpp's SentencePiece defaults: <s> = 1, </s> = 2.
        if (!v.bos_ && n > 1) v.bos_ = 1;
        if (!v.eos_ && n > 2) v.eos_ = 2;
    }
    const auto eot = special_id("tokenizer.ggml.eot_token_id");
    v.add_bos_ = md.get_bool("tokenizer.ggml.add_bos_token").value_or(add_bos);
    v.add_eos_ = md.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
    if (v.model_ == TokenizerModel::WordPiece) {
        v.read_wordpiece(md, special_id("tokenizer.ggml.seperator_token_id"), special_id("tokenizer.ggml.unknown_token_id"));
    } else {
        if (v.add_bos_ && !v.bos_) throw Error("bad metadata: add_bos_token is set but there is no bos_token_id");
        if (v.add_eos_ && !v.eos_) throw Error("bad metadata: add_eos_token is set but there is no eos_token_id");
    }

    v.mark_special_texts(md, eot);

    for (size_t i = 0; i < n; ++i) {
        const TokenKind k = v.kinds_[i];
        if (k == TokenKind::Control || k == TokenKind::Unknown || k == TokenKind::UserDefined) {
            if (!v.texts_[i].empty()) v.specials_.push_back(TokenId(i));
        }
    }
    std::stable_sort(v.specials_.begin(), v.specials_.end(),
                     [&](TokenId a, TokenId b) { return v.text(a).size() > v.text(b).size(); });
    v.set_strip_flags(md);
    return v;
}

}  // namespace smolinfer::text
