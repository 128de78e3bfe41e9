#!/usr/bin/env python3
"""Record llama-quantize's per-tensor type choices as a golden file.

Writes tests/golden/quantize/llama-quantize-types.json: for every type mix,
the tensor types, general.file_type and the metadata key order of the file
llama.cpp's llama-quantize makes from the SmolLM2-135M-Instruct Q4_1 model
(plus the input's tensor names, shapes and types, so that the C++ test can
replay the choice without the model). tests/test_tensor_type_choice.cpp
checks smolinfer's choices against it.

Usage:
  scripts/gen-quantize-types-golden.py --llama-quantize /path/to/llama-quantize [--model M]
      runs llama-quantize --allow-requantize M OUT TYPE 1 for every mix, in a temp dir
  scripts/gen-quantize-types-golden.py --from DIR [DIR...] [--model M]
      reads existing DIR/ref-<TYPE>.gguf files instead

Needs the PyPI package gguf (tested with 0.19.0).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import gguf

MIXES = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L",
         "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "F16", "BF16", "F32"]

REWRITTEN = {"general.file_type", "general.quantization_version"}


def field_value(f):
    """A comparable value for a metadata field."""
    if f.types and f.types[0] == gguf.GGUFValueType.ARRAY:
        return [f.contents(i) for i in range(len(f.data))] if f.types[1] == gguf.GGUFValueType.STRING \
            else [v.tolist() if hasattr(v, "tolist") else v for v in f.contents()]
    return f.contents()


def metadata(reader):
    out = {}
    for k, f in reader.fields.items():
        if k.startswith("GGUF."):
            continue
        out[k] = (int(f.types[0]), field_value(f))
    return out


def compact_json(v, indent=""):
    """JSON with objects one key per line, and lists of scalars (or of small objects) on one line each."""
    inner = indent + " "
    if isinstance(v, dict):
        items = [f"{inner}{json.dumps(k)}: {compact_json(x, inner)}" for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(v, list) and any(isinstance(x, dict) for x in v):
        return "[\n" + ",\n".join(inner + json.dumps(x) for x in v) + "\n" + indent + "]"
    return json.dumps(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                    "smolinfer", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--llama-quantize")
    ap.add_argument("--from", dest="dirs", nargs="*", default=[])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "golden", "quantize",
                                                  "llama-quantize-types.json"))
    args = ap.parse_args()
    if not args.llama_quantize and not args.dirs:
        ap.error("give --llama-quantize or --from")

    src = gguf.GGUFReader(args.model)
    src_md = metadata(src)
    tensors = [{"name": t.name, "ne": [int(x) for x in t.shape], "type": t.tensor_type.name} for t in src.tensors]
    arch = src_md["general.architecture"][1]

    def u32(key, default=0):
        return int(src_md[key][1]) if key in src_md else default

    golden = {
        "about": "llama.cpp's llama-quantize --allow-requantize on SmolLM2-135M-Instruct.Q4_1.gguf, one file per mix; "
                 "made by scripts/gen-quantize-types-golden.py. 'types' follows 'tensors' (the input's order).",
        "model": {"arch": arch, "n_layer": u32(f"{arch}.block_count"), "n_head": u32(f"{arch}.attention.head_count"),
                  "n_head_kv": u32(f"{arch}.attention.head_count_kv"), "n_expert": u32(f"{arch}.expert_count")},
        "input_metadata_keys": list(src_md.keys()),
        "tensors": tensors,
        "mixes": {},
    }

    tmp = tempfile.TemporaryDirectory() if args.llama_quantize else None
    for mix in MIXES:
        path = None
        if args.llama_quantize:
            path = os.path.join(tmp.name, f"ref-{mix}.gguf")
            subprocess.run([args.llama_quantize, "--allow-requantize", args.model, path, mix, "1"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            for d in args.dirs:
                p = os.path.join(d, f"ref-{mix}.gguf")
                if os.path.exists(p):
                    path = p
        if path is None:
            print(f"gen-quantize-types-golden: no file for {mix}, skipped", file=sys.stderr)
            continue
        r = gguf.GGUFReader(path)
        md = metadata(r)
        # Everything but the two rewritten keys is the input's, unchanged.
        for k, v in src_md.items():
            if k not in REWRITTEN and md.get(k) != v:
                sys.exit(f"gen-quantize-types-golden: {mix}: metadata {k} differs from the input")
        by_name = {t.name: t for t in r.tensors}
        assert len(by_name) == len(tensors), mix
        types = []
        for t in tensors:
            o = by_name[t["name"]]
            assert [int(x) for x in o.shape] == t["ne"], (mix, t["name"])
            types.append(o.tensor_type.name)
        golden["mixes"][mix] = {
            "file_type": int(md["general.file_type"][1]),
            "quantization_version": int(md["general.quantization_version"][1]),
            "alignment": int(r.alignment),
            "metadata_keys": list(md.keys()),
            "file_bytes": os.path.getsize(path),
            "types": types,
        }
        print(f"gen-quantize-types-golden: {mix}: file_type {golden['mixes'][mix]['file_type']}", file=sys.stderr)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(compact_json(golden) + "\n")


if __name__ == "__main__":
    main()
