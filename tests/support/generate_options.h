// Generation options the tests share.
#pragma once

#include "smolinfer/session.h"

namespace smolinfer::test {

// max_tokens greedy tokens, end-of-generation ignored (a random-weight model
// may emit an end token at any time).
inline GenerateOptions greedy(int max_tokens) {
    GenerateOptions g;
    g.max_tokens = max_tokens;
    g.sampling.temperature = 0.0f;
    g.ignore_eos = true;
    return g;
}

}  // namespace smolinfer::test
