#!/usr/bin/env python3
"""Weight error of smolinfer's quantizer against llama.cpp's, on real tensors.

Given the source model and the same TYPE quantized by smolinfer and by
llama-quantize, prints for every tensor type the RMS error against the
source of each (over all tensors of that type, weighted by size) and their
ratio; also reports any tensor whose chosen type differs between the two.
Dequantization is the PyPI gguf package's.

Usage:
    python3 scripts/compare-quantizers.py SOURCE.gguf OURS.gguf LLAMA.gguf
"""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


def tensors(path: str) -> dict:
    return {t.name: t for t in GGUFReader(path).tensors}


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    src, ours, theirs = (tensors(p) for p in sys.argv[1:])
    sq = defaultdict(lambda: [0.0, 0.0, 0])  # type -> [our squared error, theirs, values]
    for name, t in ours.items():
        o = theirs[name]
        if t.tensor_type != o.tensor_type:
            print(f"type differs: {name}: ours {t.tensor_type.name}, llama.cpp {o.tensor_type.name}")
            continue
        if t.tensor_type.name in ("F32",):
            continue
        x = dequantize(src[name].data, src[name].tensor_type).astype(np.float64).ravel()
        a = dequantize(t.data, t.tensor_type).astype(np.float64).ravel()
        b = dequantize(o.data, o.tensor_type).astype(np.float64).ravel()
        s = sq[t.tensor_type.name]
        s[0] += float(np.sum((a - x) ** 2))
        s[1] += float(np.sum((b - x) ** 2))
        s[2] += x.size
    print(f"{'type':6} {'values':>10} {'RMS ours':>11} {'RMS llama':>11} {'ratio':>6}")
    for name, (a, b, n) in sorted(sq.items()):
        ra, rb = (a / n) ** 0.5, (b / n) ** 0.5
        # Both exact (a tensor already in this type, requantized losslessly):
        # "exact" rather than 0/0.
        ratio = f"{ra / rb:6.3f}" if rb > 0 else ("exact" if ra == 0 else "inf")
        print(f"{name:6} {n:>10} {ra:11.4e} {rb:11.4e} {ratio:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
