// The bytes of the model at a path: the file itself, or, when it is the
// first part of a split model (gguf/split.h), every part, found by name
// beside it ("<name>-00002-of-00003.gguf", ...). Each file is mapped in
// place (map) or read into private memory (runtime::FileBytes::read).
#pragma once

#include <memory>
#include <string>

#include "runtime/file_bytes.h"

namespace smolinfer {

// Throws smolinfer::Error naming the part that is missing or does not
// belong (a later part given instead of the first, a sibling with the wrong
// split.no or split.count, tensors that do not add up).
std::shared_ptr<const runtime::FileBytes> open_model_files(const std::string& path, bool map);

}  // namespace smolinfer
