// Just enough of GGUF for the roofline (bench/roofline.mjs): the metadata
// scalars and every tensor's type and shape, hence its size in bytes. Reads
// the header only. (The smolinfer CLI reports neither tensor sizes nor the
// model's dimensions, and the bench must not depend on src/ internals;
// llama-bench's model_size is compared with this file's total.)
import fs from "node:fs";

// ggml type id -> [values per block, bytes per block]
const TYPES = {
  0: ["F32", 1, 4],
  1: ["F16", 1, 2],
  2: ["Q4_0", 32, 18],
  3: ["Q4_1", 32, 20],
  6: ["Q5_0", 32, 22],
  7: ["Q5_1", 32, 24],
  8: ["Q8_0", 32, 34],
  9: ["Q8_1", 32, 36],
  10: ["Q2_K", 256, 84],
  11: ["Q3_K", 256, 110],
  12: ["Q4_K", 256, 144],
  13: ["Q5_K", 256, 176],
  14: ["Q6_K", 256, 210],
  15: ["Q8_K", 256, 292],
  24: ["I8", 1, 1],
  25: ["I16", 1, 2],
  26: ["I32", 1, 4],
  27: ["I64", 1, 8],
  28: ["F64", 1, 8],
  30: ["BF16", 1, 2],
};

class Reader {
  constructor(fd) {
    this.fd = fd;
    this.pos = 0;
    this.buf = Buffer.alloc(0);
    this.bufStart = 0;
  }
  ensure(n) {
    const off = this.pos - this.bufStart;
    if (off >= 0 && off + n <= this.buf.length) return off;
    const size = Math.max(n, 1 << 20);
    this.buf = Buffer.alloc(size);
    const got = fs.readSync(this.fd, this.buf, 0, size, this.pos);
    if (got < n) throw new Error(`gguf: unexpected end of file at byte ${this.pos}`);
    this.buf = this.buf.subarray(0, got);
    this.bufStart = this.pos;
    return 0;
  }
  u8() { const o = this.ensure(1); this.pos += 1; return this.buf.readUInt8(o); }
  i8() { const o = this.ensure(1); this.pos += 1; return this.buf.readInt8(o); }
  u16() { const o = this.ensure(2); this.pos += 2; return this.buf.readUInt16LE(o); }
  i16() { const o = this.ensure(2); this.pos += 2; return this.buf.readInt16LE(o); }
  u32() { const o = this.ensure(4); this.pos += 4; return this.buf.readUInt32LE(o); }
  i32() { const o = this.ensure(4); this.pos += 4; return this.buf.readInt32LE(o); }
  f32() { const o = this.ensure(4); this.pos += 4; return this.buf.readFloatLE(o); }
  u64() { const o = this.ensure(8); this.pos += 8; return Number(this.buf.readBigUInt64LE(o)); }
  i64() { const o = this.ensure(8); this.pos += 8; return Number(this.buf.readBigInt64LE(o)); }
  f64() { const o = this.ensure(8); this.pos += 8; return this.buf.readDoubleLE(o); }
  str() {
    const n = this.u64();
    if (n > 1 << 24) throw new Error(`gguf: string of ${n} bytes at byte ${this.pos}`);
    const o = this.ensure(n);
    this.pos += n;
    return this.buf.toString("utf8", o, o + n);
  }
  value(type) {
    switch (type) {
      case 0: return this.u8();
      case 1: return this.i8();
      case 2: return this.u16();
      case 3: return this.i16();
      case 4: return this.u32();
      case 5: return this.i32();
      case 6: return this.f32();
      case 7: return this.u8() !== 0;
      case 8: return this.str();
      case 9: {
        const t = this.u32();
        const n = this.u64();
        // Arrays (the vocabulary) are skipped, only their length kept.
        for (let i = 0; i < n; i++) this.value(t);
        return { array: n };
      }
      case 10: return this.u64();
      case 11: return this.i64();
      case 12: return this.f64();
      default: throw new Error(`gguf: unknown value type ${type} at byte ${this.pos}`);
    }
  }
}

/** { metadata, tensors: [{name, type, typeName, dims, bytes}], tensorBytes, fileBytes } */
export function readGguf(file) {
  const fd = fs.openSync(file, "r");
  try {
    const r = new Reader(fd);
    if (r.u32() !== 0x46554747) throw new Error(`${file}: not a GGUF file`);
    const version = r.u32();
    if (version < 2 || version > 3) throw new Error(`${file}: GGUF version ${version} is not supported`);
    const nTensors = r.u64();
    const nKv = r.u64();
    const metadata = {};
    for (let i = 0; i < nKv; i++) {
      const key = r.str();
      metadata[key] = r.value(r.u32());
    }
    const tensors = [];
    for (let i = 0; i < nTensors; i++) {
      const name = r.str();
      const nDims = r.u32();
      const dims = [];
      for (let d = 0; d < nDims; d++) dims.push(r.u64());
      const type = r.u32();
      r.u64(); // offset
      const t = TYPES[type];
      if (!t) throw new Error(`${file}: tensor ${name} has unknown type ${type}`);
      const elements = dims.reduce((a, b) => a * b, 1);
      tensors.push({ name, type, typeName: t[0], dims, bytes: (elements / t[1]) * t[2] });
    }
    return {
      metadata,
      tensors,
      tensorBytes: tensors.reduce((a, t) => a + t.bytes, 0),
      fileBytes: fs.fstatSync(fd).size,
    };
  } finally {
    fs.closeSync(fd);
  }
}
