#include "support/llama_vocab.h"

#include <map>
#include <memory>
#include <mutex>

#include "gguf/gguf.h"
#include "runtime/file_bytes.h"
#include "support/paths.h"

namespace smolinfer::test {

namespace {

// The metadata views the file's bytes, so they stay together.
struct Loaded {
    explicit Loaded(const std::string& path)
        : bytes(runtime::FileBytes::map(path)),
          file(gguf::File::parse(bytes->bytes())),
          vocab(text::Vocab::from_metadata(file.metadata())) {}
    std::shared_ptr<const runtime::FileBytes> bytes;
    gguf::File file;
    text::Vocab vocab;
};

}  // namespace

const text::Vocab& llama_vocab(const std::string& name) {
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<Loaded>> cache;
    const std::lock_guard<std::mutex> lock(mutex);
    auto& slot = cache[name];
    if (!slot) slot = std::make_unique<Loaded>(llama_source_path("models/ggml-vocab-" + name + ".gguf"));
    return slot->vocab;
}

}  // namespace smolinfer::test
