// llama.cpp's vocabulary-only GGUFs (models/ggml-vocab-<name>.gguf in its
// source tree, $SMOLINFER_LLAMA_SRC), loaded once per test process through
// our gguf reader and Vocab::from_metadata (they have no tensors).
#pragma once

#include <string>

#include "text/vocab.h"

namespace smolinfer::test {

// e.g. llama_vocab("llama-spm"). Throws when the file is missing or the
// vocabulary does not load.
const text::Vocab& llama_vocab(const std::string& name);

}  // namespace smolinfer::test
