#!/usr/bin/env python3
"""Generate golden test data for the GGML block quantization formats.

The reference ("truth") is the PyPI `gguf` package's numpy dequantizer
(gguf.quants.dequantize).  Every result is additionally cross-checked against
an independent plain-Python decoder written from the ggml C reference layouts
(dequantize_row_* in ggml-quants.c), so a misuse of the package API (wrong
reshape, wrong byte order, ...) makes this script fail instead of writing bad
data.

Output: one JSON file per type in --out (default: tests/golden/quant relative
to the repository root) plus a README.md.  The output is deterministic: running
the script twice gives byte-identical files (for the pinned versions in
scripts/requirements-golden.txt).

Usage:
    pip install -r scripts/requirements-golden.txt
    python3 scripts/gen-quant-golden.py [--out tests/golden/quant]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import struct
import sys

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf.quants import dequantize

BASE_SEED = 20240601
QK_K = 256

# ---------------------------------------------------------------------------
# Block layouts: ordered list of (field, n_bytes, kind).
#   kind "d"    : fp16 scale, finite & normal, |d| in [1e-3, 1e-1], mixed sign
#   kind "m"    : fp16 min/offset, finite & normal, mixed sign,
#                 |m| in [1e-3, 1] (Q4_1/Q5_1) or [1e-3, 1e-1] (K dmin)
#   kind "q"    : raw quant payload bytes, every bit pattern legal
# Offsets follow the ggml C structs (block_q4_0 ... block_q6_K).
# ---------------------------------------------------------------------------
LAYOUTS: dict[str, list[tuple[str, int, str]]] = {
    "Q4_0": [("d", 2, "d"), ("qs", 16, "q")],
    "Q4_1": [("d", 2, "d"), ("m", 2, "m"), ("qs", 16, "q")],
    "Q5_0": [("d", 2, "d"), ("qh", 4, "q"), ("qs", 16, "q")],
    "Q5_1": [("d", 2, "d"), ("m", 2, "m"), ("qh", 4, "q"), ("qs", 16, "q")],
    "Q8_0": [("d", 2, "d"), ("qs", 32, "q")],
    "Q2_K": [("scales", 16, "q"), ("qs", 64, "q"), ("d", 2, "d"), ("dmin", 2, "m")],
    "Q3_K": [("hmask", 32, "q"), ("qs", 64, "q"), ("scales", 12, "q"), ("d", 2, "d")],
    "Q4_K": [("d", 2, "d"), ("dmin", 2, "m"), ("scales", 12, "q"), ("qs", 128, "q")],
    "Q5_K": [("d", 2, "d"), ("dmin", 2, "m"), ("scales", 12, "q"), ("qh", 32, "q"), ("qs", 128, "q")],
    "Q6_K": [("ql", 128, "q"), ("qh", 64, "q"), ("scales", 16, "q"), ("d", 2, "d")],
}

# Types to cover, in ggml type-id order.  Q8_1 and Q8_K are attempted but
# skipped when the installed gguf package cannot dequantize them.
TYPES = ["F32", "F16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1",
         "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "BF16"]

N_BLOCKS_32 = 16      # blocks for 32-element formats
N_BLOCKS_K = 3        # super-blocks for 256-element K formats
N_FLOAT_VALUES = 64   # values for F32 / F16 / BF16


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------
def rng_for(type_id: int, purpose: int) -> np.random.Generator:
    """Independent, deterministic stream per (type, purpose)."""
    return np.random.default_rng([BASE_SEED, type_id, purpose])


def f16_bits(rng: np.random.Generator, lo: float, hi: float, negative: bool) -> bytes:
    """A finite, normal fp16 with |x| log-uniform in [lo, hi] and the given sign."""
    mag = 10.0 ** rng.uniform(math.log10(lo), math.log10(hi))
    h = np.float16(-mag if negative else mag)
    assert np.isfinite(h) and abs(h) >= np.finfo(np.float16).tiny, h
    return h.tobytes()  # little-endian on all supported hosts (checked in main)


def f16(b: bytes) -> float:
    return struct.unpack("<e", b)[0]


def f32_round(x: float) -> float:
    """Round a Python float (double) to the nearest float32, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def u32(b: bytes) -> int:
    return struct.unpack("<I", b)[0]


def s8(v: int) -> int:
    return v - 256 if v >= 128 else v


# ---------------------------------------------------------------------------
# Block generation
# ---------------------------------------------------------------------------
def edge_payload(type_name: str, field: str, n: int, kind_idx: int) -> bytes:
    """Hand-made payloads for the edge blocks of 32-element formats.

    kind_idx 0: all-zero quants, 1: all-max quants,
             2: Q8_0 all-min (-128); others: low nibbles max / high nibbles 0,
                qh bits set for elements 0..15 only,
             3: ramp (element j = j for j<16, 15-(j-16) for j>=16 in the
                low 4 bits; alternating qh bits; Q8_0: -128, -120, ..., 120).
    """
    if kind_idx == 0:
        return bytes(n)
    if kind_idx == 1:
        return bytes([0x7F if type_name == "Q8_0" else 0xFF]) * n
    if kind_idx == 2:
        if type_name == "Q8_0":
            return bytes([0x80]) * n
        if field == "qh":
            return bytes([0xFF, 0xFF, 0x00, 0x00])
        return bytes([0x0F]) * n
    if kind_idx == 3:
        if type_name == "Q8_0":
            return bytes(((i * 8 - 128) & 0xFF) for i in range(n))
        if field == "qh":
            return bytes([0xAA, 0x55, 0xAA, 0x55])
        return bytes(((i & 0xF) | ((15 - (i & 0xF)) << 4)) for i in range(n))
    raise ValueError(kind_idx)


def gen_quant_blocks(type_name: str, type_id: int) -> bytes:
    layout = LAYOUTS[type_name]
    block_elems, block_bytes = GGML_QUANT_SIZES[T[type_name]]
    assert sum(n for _, n, _ in layout) == block_bytes, type_name
    n_blocks = N_BLOCKS_32 if block_elems == 32 else N_BLOCKS_K
    n_edge = 4 if block_elems == 32 else 0
    rng = rng_for(type_id, 0)
    out = bytearray()
    for b in range(n_blocks):
        # Deterministic sign pattern so every file mixes signs: d < 0 in every
        # third block, min < 0 in every second one.  For the 3 K super-blocks:
        # (d+, dmin+), (d+, dmin-), (d-, dmin+).
        d_neg, m_neg = (b % 3 == 2), (b % 2 == 1)
        for field, n, kind in layout:
            if kind == "d":
                out += f16_bits(rng, 1e-3, 1e-1, d_neg)
            elif kind == "m":
                # Q4_1/Q5_1 `m` is an additive offset; K-quant `dmin` is a
                # scale for the 6-bit mins, so keep it in the range of d.
                out += f16_bits(rng, 1e-3, 1.0 if block_elems == 32 else 1e-1, m_neg)
            elif b < n_edge:
                out += edge_payload(type_name, field, n, b)
            else:
                out += rng.bytes(n)
    assert len(out) == n_blocks * block_bytes
    return bytes(out)


def float_specials() -> list[float]:
    """Edge values shared by the F32/F16/BF16 data (all exact in fp16)."""
    h = lambda bits: float(np.uint16(bits).view(np.float16))  # noqa: E731
    return [
        0.0, -0.0,
        h(0x0001), h(0x8001), h(0x03FF), h(0x83FF), h(0x0200),  # fp16 subnormals
        h(0x0400), h(0x8400),                                   # fp16 min normal
        65504.0, -65504.0, 65472.0, -65472.0, 65280.0,          # near fp16 max
        1.0, -1.0, 0.5, 2.0,
    ]


def gen_float_values(type_name: str, type_id: int) -> bytes:
    rng = rng_for(type_id, 0)
    specials = float_specials()
    n_rand = N_FLOAT_VALUES - len(specials)
    mags = 10.0 ** rng.uniform(-4.0, 3.0, size=n_rand)
    signs = np.where(rng.integers(0, 2, size=n_rand) == 1, -1.0, 1.0)
    rand = (mags * signs).tolist()
    vals = specials + rand
    perm = rng.permutation(len(vals))
    vals = [vals[i] for i in perm]
    if type_name == "F32":
        arr = np.array(vals, dtype=np.float32)
        # a few values that are not representable in fp16/bf16
        arr[perm.tolist().index(len(specials))] = np.float32(1.0 / 3.0)
        arr[perm.tolist().index(len(specials) + 1)] = np.float32(-123456.789)
        raw = arr.tobytes()
    elif type_name == "F16":
        arr = np.array(vals, dtype=np.float64).astype(np.float16)
        raw = arr.tobytes()
    elif type_name == "BF16":
        # round-to-nearest-even float32 -> bf16 (inputs are finite)
        f = np.array(vals, dtype=np.float32).view(np.uint32).astype(np.uint64)
        bits = ((f + 0x7FFF + ((f >> 16) & 1)) >> 16).astype(np.uint16)
        # also a bf16 subnormal (float32 subnormal) and a negative one
        bits[perm.tolist().index(len(specials))] = 0x0001
        bits[perm.tolist().index(len(specials) + 1)] = 0x8005
        raw = bits.tobytes()
    else:
        raise ValueError(type_name)
    assert len(raw) == N_FLOAT_VALUES * GGML_QUANT_SIZES[T[type_name]][1]
    return raw


# ---------------------------------------------------------------------------
# Independent plain-Python decoders (from ggml-quants.c dequantize_row_*).
# Every product below is computed exactly in double precision and rounded to
# float32 once, which is what a float32 implementation produces as well: all
# intermediate products (fp16 * small int) are exact in float32, so only the
# final add/sub (or the final product for Q6_K) rounds.
# ---------------------------------------------------------------------------
def split_fields(type_name: str, blk: bytes) -> dict[str, bytes]:
    out, off = {}, 0
    for field, n, _ in LAYOUTS[type_name]:
        out[field] = blk[off:off + n]
        off += n
    return out


def hand_q4_0(blk: bytes) -> list[float]:
    f = split_fields("Q4_0", blk)
    d, qs = f16(f["d"]), f["qs"]
    y = [0.0] * 32
    for j in range(16):
        y[j] = f32_round(((qs[j] & 0x0F) - 8) * d)
        y[j + 16] = f32_round(((qs[j] >> 4) - 8) * d)
    return y


def hand_q4_1(blk: bytes) -> list[float]:
    f = split_fields("Q4_1", blk)
    d, m, qs = f16(f["d"]), f16(f["m"]), f["qs"]
    y = [0.0] * 32
    for j in range(16):
        y[j] = f32_round((qs[j] & 0x0F) * d + m)
        y[j + 16] = f32_round((qs[j] >> 4) * d + m)
    return y


def hand_q5_0(blk: bytes) -> list[float]:
    f = split_fields("Q5_0", blk)
    d, qh, qs = f16(f["d"]), u32(f["qh"]), f["qs"]
    y = [0.0] * 32
    for j in range(16):
        xh0 = ((qh >> j) << 4) & 0x10
        xh1 = (qh >> (j + 12)) & 0x10
        y[j] = f32_round((((qs[j] & 0x0F) | xh0) - 16) * d)
        y[j + 16] = f32_round((((qs[j] >> 4) | xh1) - 16) * d)
    return y


def hand_q5_1(blk: bytes) -> list[float]:
    f = split_fields("Q5_1", blk)
    d, m, qh, qs = f16(f["d"]), f16(f["m"]), u32(f["qh"]), f["qs"]
    y = [0.0] * 32
    for j in range(16):
        xh0 = ((qh >> j) << 4) & 0x10
        xh1 = (qh >> (j + 12)) & 0x10
        y[j] = f32_round(((qs[j] & 0x0F) | xh0) * d + m)
        y[j + 16] = f32_round(((qs[j] >> 4) | xh1) * d + m)
    return y


def hand_q8_0(blk: bytes) -> list[float]:
    f = split_fields("Q8_0", blk)
    d, qs = f16(f["d"]), f["qs"]
    return [f32_round(s8(qs[j]) * d) for j in range(32)]


def hand_q2_k(blk: bytes) -> list[float]:
    f = split_fields("Q2_K", blk)
    d, dmin, sc, q = f16(f["d"]), f16(f["dmin"]), f["scales"], f["qs"]
    y, is_ = [], 0
    for n in range(0, QK_K, 128):
        qo = n // 4  # 32 bytes of qs per 128 elements
        for shift in (0, 2, 4, 6):
            for half in (0, 16):
                s = sc[is_]
                is_ += 1
                dl, ml = d * (s & 0x0F), dmin * (s >> 4)
                for l in range(16):
                    y.append(f32_round(dl * ((q[qo + half + l] >> shift) & 3) - ml))
    return y


def k_scale_min(j: int, q: bytes) -> tuple[int, int]:
    """get_scale_min_k4 from ggml-quants.c (Q4_K / Q5_K 6-bit packed scales)."""
    if j < 4:
        return q[j] & 63, q[j + 4] & 63
    return ((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4))


def hand_q3_k(blk: bytes) -> list[float]:
    f = split_fields("Q3_K", blk)
    d, hm, q, sb = f16(f["d"]), f["hmask"], f["qs"], f["scales"]
    # 16 x 6-bit signed scales (offset 32): low 4 bits from bytes 0..7,
    # high 2 bits from bytes 8..11.
    scales = []
    for j in range(16):
        lo = (sb[j] & 0x0F) if j < 8 else (sb[j - 8] >> 4)
        hi = (sb[8 + (j % 4)] >> (2 * (j // 4))) & 3
        scales.append((lo | (hi << 4)) - 32)
    y, is_, m = [], 0, 1
    for n in range(0, QK_K, 128):
        qo = n // 4
        for shift in (0, 2, 4, 6):
            for half in (0, 16):
                dl = d * scales[is_]
                is_ += 1
                for l in range(16):
                    qv = (q[qo + half + l] >> shift) & 3
                    qv -= 0 if (hm[half + l] & m) else 4
                    y.append(f32_round(dl * qv))
            m <<= 1
    return y


def hand_q4_k(blk: bytes) -> list[float]:
    f = split_fields("Q4_K", blk)
    d, dmin, sb, q = f16(f["d"]), f16(f["dmin"]), f["scales"], f["qs"]
    y, is_ = [], 0
    for j in range(0, QK_K, 64):
        qo = j // 2
        sc1, m1 = k_scale_min(is_, sb)
        sc2, m2 = k_scale_min(is_ + 1, sb)
        d1, mm1, d2, mm2 = d * sc1, dmin * m1, d * sc2, dmin * m2
        y += [f32_round(d1 * (q[qo + l] & 0x0F) - mm1) for l in range(32)]
        y += [f32_round(d2 * (q[qo + l] >> 4) - mm2) for l in range(32)]
        is_ += 2
    return y


def hand_q5_k(blk: bytes) -> list[float]:
    f = split_fields("Q5_K", blk)
    d, dmin, sb, qh, ql = f16(f["d"]), f16(f["dmin"]), f["scales"], f["qh"], f["qs"]
    y, is_, u1, u2 = [], 0, 1, 2
    for j in range(0, QK_K, 64):
        qo = j // 2
        sc1, m1 = k_scale_min(is_, sb)
        sc2, m2 = k_scale_min(is_ + 1, sb)
        d1, mm1, d2, mm2 = d * sc1, dmin * m1, d * sc2, dmin * m2
        y += [f32_round(d1 * ((ql[qo + l] & 0x0F) + (16 if qh[l] & u1 else 0)) - mm1) for l in range(32)]
        y += [f32_round(d2 * ((ql[qo + l] >> 4) + (16 if qh[l] & u2 else 0)) - mm2) for l in range(32)]
        is_ += 2
        u1 <<= 2
        u2 <<= 2
    return y


def hand_q6_k(blk: bytes) -> list[float]:
    f = split_fields("Q6_K", blk)
    d, ql, qh = f16(f["d"]), f["ql"], f["qh"]
    sc = [s8(v) for v in f["scales"]]
    y = [0.0] * QK_K
    for n in range(0, QK_K, 128):
        lo, ho, so = n // 2, n // 4, n // 16
        for l in range(32):
            is_ = l // 16
            q1 = ((ql[lo + l] & 0x0F) | (((qh[ho + l] >> 0) & 3) << 4)) - 32
            q2 = ((ql[lo + l + 32] & 0x0F) | (((qh[ho + l] >> 2) & 3) << 4)) - 32
            q3 = ((ql[lo + l] >> 4) | (((qh[ho + l] >> 4) & 3) << 4)) - 32
            q4 = ((ql[lo + l + 32] >> 4) | (((qh[ho + l] >> 6) & 3) << 4)) - 32
            y[n + l] = f32_round(d * sc[so + is_] * q1)
            y[n + l + 32] = f32_round(d * sc[so + is_ + 2] * q2)
            y[n + l + 64] = f32_round(d * sc[so + is_ + 4] * q3)
            y[n + l + 96] = f32_round(d * sc[so + is_ + 6] * q4)
    return y


def hand_f32(blk: bytes) -> list[float]:
    return [struct.unpack("<f", blk)[0]]


def hand_f16(blk: bytes) -> list[float]:
    return [f16(blk)]


def hand_bf16(blk: bytes) -> list[float]:
    return [struct.unpack("<f", b"\x00\x00" + blk)[0]]


HAND = {
    "F32": hand_f32, "F16": hand_f16, "BF16": hand_bf16,
    "Q4_0": hand_q4_0, "Q4_1": hand_q4_1, "Q5_0": hand_q5_0, "Q5_1": hand_q5_1,
    "Q8_0": hand_q8_0, "Q2_K": hand_q2_k, "Q3_K": hand_q3_k, "Q4_K": hand_q4_k,
    "Q5_K": hand_q5_k, "Q6_K": hand_q6_k,
}


def same_f32(a: float, b: float) -> bool:
    """Bit-exact float32 equality (distinguishes -0.0 from 0.0)."""
    return struct.pack("<f", a) == struct.pack("<f", b)


def hand_check(type_name: str, raw: bytes, values: list[float]) -> None:
    block_elems, block_bytes = GGML_QUANT_SIZES[T[type_name]]
    n_blocks = len(raw) // block_bytes
    for b in range(n_blocks):
        ref = HAND[type_name](raw[b * block_bytes:(b + 1) * block_bytes])
        got = values[b * block_elems:(b + 1) * block_elems]
        assert len(ref) == block_elems, (type_name, len(ref))
        for i, (r, g) in enumerate(zip(ref, got)):
            assert same_f32(r, g), f"{type_name} block {b} elem {i}: hand {r!r} != gguf {g!r}"


def spot_checks() -> None:
    """Literal, hand-computed single-block checks (guard against API misuse)."""
    # Q4_0: d = 0.5, byte i = (hi=i%16, lo=15-i%16)
    qs = bytes(((15 - i) | (i << 4)) for i in range(16))
    blk = np.frombuffer(np.float16(0.5).tobytes() + qs, dtype=np.uint8)
    v = dequantize(blk, T.Q4_0).ravel().tolist()
    assert v[:16] == [(15 - i - 8) * 0.5 for i in range(16)], v
    assert v[16:] == [(i - 8) * 0.5 for i in range(16)], v
    # Q8_0: d = -0.25, qs = -16..15
    qs = bytes(((i - 16) & 0xFF) for i in range(32))
    blk = np.frombuffer(np.float16(-0.25).tobytes() + qs, dtype=np.uint8)
    v = dequantize(blk, T.Q8_0).ravel().tolist()
    assert v == [(i - 16) * -0.25 for i in range(32)], v
    # Q4_K: d = 1, dmin = 0.5; eight 6-bit sub-block scales/mins (using the
    # high 2 bits too) packed with the 12-byte layout; qs byte = 0x5A
    # (low nibble 10 for even sub-blocks, high nibble 5 for odd ones).
    sc = [5, 17, 33, 63, 20, 40, 48, 1]
    mn = [0, 63, 16, 31, 32, 50, 7, 60]
    sb = [0] * 12
    for j in range(4):
        sb[j] = sc[j] | ((sc[j + 4] >> 4) << 6)
        sb[j + 4] = mn[j] | ((mn[j + 4] >> 4) << 6)
        sb[j + 8] = (sc[j + 4] & 0x0F) | ((mn[j + 4] & 0x0F) << 4)
    raw = np.float16(1.0).tobytes() + np.float16(0.5).tobytes() + bytes(sb) + bytes([0x5A]) * 128
    v = dequantize(np.frombuffer(raw, dtype=np.uint8), T.Q4_K).ravel().tolist()
    for j in range(8):
        q = 10 if j % 2 == 0 else 5  # even sub-blocks use low nibbles
        want = sc[j] * q - 0.5 * mn[j]
        assert v[32 * j:32 * j + 32] == [want] * 32, (j, v[32 * j:32 * j + 32], want)
    # And the plain-Python decoders agree on these literal blocks.
    assert hand_q4_k(raw) == v


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------
def fmt_list(xs: list[float], per_line: int = 8) -> str:
    lines = [", ".join(json.dumps(x) for x in xs[i:i + per_line]) for i in range(0, len(xs), per_line)]
    return "[\n    " + ",\n    ".join(lines) + "\n  ]"


def dump(obj: dict) -> str:
    parts = []
    for k, v in obj.items():
        if isinstance(v, list) and len(v) > 8:
            parts.append(f"  {json.dumps(k)}: {fmt_list(v)}")
        else:
            parts.append(f"  {json.dumps(k)}: {json.dumps(v)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def layout_str(type_name: str) -> str:
    if type_name in LAYOUTS:
        return " | ".join(
            f"{f}:{'f16' if k in ('d', 'm') else 'u8[%d]' % n}" for f, n, k in LAYOUTS[type_name])
    return {"F32": "f32", "F16": "f16", "BF16": "bf16"}[type_name]


def build(type_name: str, version: str) -> dict | None:
    qt = T[type_name]
    type_id = int(qt)
    block_elems, block_bytes = GGML_QUANT_SIZES[qt]
    if type_name in ("F32", "F16", "BF16"):
        raw = gen_float_values(type_name, type_id)
    elif type_name in LAYOUTS:
        raw = gen_quant_blocks(type_name, type_id)
    else:
        # Probe whether the package can dequantize this type at all.
        try:
            dequantize(np.zeros(block_bytes, dtype=np.uint8), qt)
        except NotImplementedError:
            return None
        raise SystemExit(f"gguf can dequantize {type_name} but this script has no layout for it; add one")

    data = np.frombuffer(raw, dtype=np.uint8).copy()
    deq = dequantize(data, qt)
    deq = np.asarray(deq)
    assert deq.dtype == np.float32, deq.dtype
    deq = deq.reshape(-1)
    n_blocks = len(raw) // block_bytes
    assert len(raw) == n_blocks * block_bytes
    assert deq.size == n_blocks * block_elems, (deq.size, n_blocks, block_elems)
    assert np.all(np.isfinite(deq)), type_name

    values = [float(x) for x in deq]  # exact float32 values as Python floats
    hand_check(type_name, raw, values)

    xr = rng_for(type_id, 1)
    dot_x = [float(x) for x in xr.uniform(-2.0, 2.0, size=len(values)).astype(np.float32)]
    # float32*float32 products are exact in float64; fsum gives the correctly
    # rounded float64 sum, independent of summation order.
    dot_ref = math.fsum(a * b for a, b in zip(values, dot_x))

    return {
        "type": type_name,
        "type_id": type_id,
        "block_elems": block_elems,
        "block_bytes": block_bytes,
        "n_blocks": n_blocks,
        "layout": layout_str(type_name),
        "source": f"gguf {version} numpy dequantize",
        "seed": [BASE_SEED, type_id],
        "dot_ref": dot_ref,
        "hex": raw.hex(),
        "values": values,
        "dot_x": dot_x,
    }


README = """\
Golden data for GGML block quant formats: per type, raw blocks (`hex`), their float32 `values` from the PyPI `gguf` {version} numpy dequantizer (checked bit-exactly against plain-Python decoders), and `dot_x`/`dot_ref` (float64 dot, correctly rounded). Not generated (package cannot dequantize): {skipped}.

Regenerate (deterministic): `pip install -r scripts/requirements-golden.txt && python3 scripts/gen-quant-golden.py --out tests/golden/quant`
"""


def main() -> int:
    repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(repo_root, "tests", "golden", "quant"),
                    help="output directory (default: <repo>/tests/golden/quant)")
    args = ap.parse_args()

    assert sys.byteorder == "little", "this script assumes a little-endian host"
    version = importlib.metadata.version("gguf")

    spot_checks()

    os.makedirs(args.out, exist_ok=True)
    written, skipped = [], []
    for name in TYPES:
        obj = build(name, version)
        if obj is None:
            skipped.append(name)
            print(f"skip  {name:5s}: gguf {version} cannot dequantize it", file=sys.stderr)
            continue
        text = dump(obj)
        # sanity: the file parses back and values round-trip exactly to float32
        back = json.loads(text)
        assert back["values"] == obj["values"] and back["dot_x"] == obj["dot_x"]
        assert all(float(np.float32(v)) == v for v in back["values"] + back["dot_x"])
        path = os.path.join(args.out, f"{name}.json")
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        written.append(name)
        print(f"wrote {path} ({len(text.encode())} bytes, {obj['n_blocks']} blocks)", file=sys.stderr)

    with open(os.path.join(args.out, "README.md"), "w", encoding="utf-8", newline="\n") as fh:
        fh.write(README.format(version=version, skipped=", ".join(skipped) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
