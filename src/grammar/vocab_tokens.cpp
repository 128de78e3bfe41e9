#include "grammar/vocab_tokens.h"

#include "text/detokenizer.h"

namespace smolinfer::grammar {

std::shared_ptr<const TokenTable> vocab_token_table(const text::Vocab& vocab) {
    const size_t n = vocab.size();
    std::vector<std::string> pieces(n);
    std::vector<uint8_t> eog(n, 0);
    for (size_t id = 0; id < n; ++id) {
        pieces[id] = text::token_piece(vocab, int(id), true);
        eog[id] = vocab.is_end_of_generation(int(id)) ? 1 : 0;
    }
    return std::make_shared<const TokenTable>(std::move(pieces), std::move(eog));
}

}  // namespace smolinfer::grammar
