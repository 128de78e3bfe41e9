#!/usr/bin/env python3
"""Record the PyPI `gguf` package's dequantization of every tensor of a model.

For each tensor: its type, shape, and the sha256 of its values dequantized to
little-endian float32 by gguf.quants.dequantize (numpy). The C++ test
(tests/test_golden_dequant.cpp) dequantizes the same file with smolinfer's
reference dequantizers and must get the same bytes, tensor by tensor. That
also proves the package can read every tensor of a file smolinfer wrote.

Usage:
    pip install -r scripts/requirements-golden.txt
    python3 scripts/gen-dequant-golden.py MODEL.gguf OUT.json
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    model, out = sys.argv[1], sys.argv[2]
    reader = GGUFReader(model)
    tensors = []
    for t in reader.tensors:
        values = dequantize(t.data, t.tensor_type).astype("<f4", copy=False)
        shape = [int(x) for x in t.shape]  # innermost first, as GGUF stores it
        if values.size != int(np.prod(shape)):
            raise SystemExit(f"{t.name}: {values.size} values for shape {shape}")
        tensors.append({
            "name": t.name,
            "type": t.tensor_type.name,
            "shape": shape,
            "sha256": hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest(),
        })
    with open(model, "rb") as f:
        model_sha = hashlib.file_digest(f, "sha256").hexdigest()
    doc = {
        "generator": f"scripts/gen-dequant-golden.py (gguf {importlib.metadata.version('gguf')}, numpy {np.__version__})",
        "model_sha256": model_sha,
        "tensors": tensors,
    }
    # One line per tensor: small diffs when a model changes.
    lines = [json.dumps(t) for t in tensors]
    with open(out, "w") as f:
        f.write("{\n")
        f.write(f' "generator": {json.dumps(doc["generator"])},\n')
        f.write(f' "model_sha256": {json.dumps(model_sha)},\n')
        f.write(' "tensors": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n")
    print(f"gen-dequant-golden: {len(tensors)} tensors -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
