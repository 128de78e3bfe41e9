// What this browser's WebAssembly can do, and which of the engine's four
// builds to run: {relaxed SIMD, plain SIMD128} x {threads, one thread}.
//
// The relaxed-SIMD build computes llama.cpp's results bit for bit only if
// f32x4.relaxed_madd is fused (one rounding), which it is wherever the CPU
// has FMA; elsewhere it rounds twice. The probe runs one case that tells
// the two apart, and checks the relaxed int8 dot product the kernels use.

/** How the engine multiplies, as chosen by chooseBuild(). */
export interface BuildChoice {
  /** "relaxed": relaxed SIMD (Chromium, Firefox); "simd128": every browser. */
  simd: "relaxed" | "simd128";
  /** Whether results are bit-identical to llama.cpp's (and the native CLI's). */
  exact: boolean;
}

export interface RelaxedSupport {
  /** The module validates: the browser has relaxed SIMD. */
  supported: boolean;
  /** relaxed_madd(1 + 2^-23, 1 - 2^-23, -1) is -2^-46, not 0. */
  fusedMadd: boolean;
  /** i32x4.relaxed_dot_i8x16_i7x16_add_s gives the exact sum with 7-bit operands. */
  dotOk: boolean;
}

const v128 = (bytes: number[]) => [0xfd, 0x0c, ...bytes];
const f32x4 = (bits: number) => v128(Array(4).fill([bits & 255, (bits >>> 8) & 255, (bits >>> 16) & 255, bits >>> 24]).flat());
const i8x16 = (value: number) => v128(Array(16).fill(value & 255));
const i32x4 = (value: number) => f32x4(value);

// (func (export "madd") (result f32) relaxed_madd(1 + 2^-23, 1 - 2^-23, -1), lane 0)
// (func (export "dot") (result i32) relaxed_dot_i8x16_i7x16_add(-3s, 5s, 7s), lane 0)
function probeModule(): Uint8Array<ArrayBuffer> {
  const madd = [0x00, ...f32x4(0x3f800001), ...f32x4(0x3f7ffffe), ...f32x4(0xbf800000), 0xfd, 0x85, 0x02, 0xfd, 0x1f, 0x00, 0x0b];
  const dot = [0x00, ...i8x16(-3), ...i8x16(5), ...i32x4(7), 0xfd, 0x93, 0x02, 0xfd, 0x1b, 0x00, 0x0b];
  const section = (id: number, content: number[]) => [id, content.length, ...content];
  const name = (s: string) => [s.length, ...Array.from(s, (c) => c.charCodeAt(0))];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [2, 0x60, 0, 1, 0x7d, 0x60, 0, 1, 0x7f]), // () -> f32, () -> i32
    ...section(3, [2, 0, 1]),
    ...section(7, [2, ...name("madd"), 0, 0, ...name("dot"), 0, 1]),
    ...section(10, [2, madd.length, ...madd, dot.length, ...dot]),
  ]);
}

export function probeRelaxedSimd(): RelaxedSupport {
  const bytes = probeModule();
  if (!WebAssembly.validate(bytes)) return { supported: false, fusedMadd: false, dotOk: false };
  try {
    const exports = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports as { madd(): number; dot(): number };
    return { supported: true, fusedMadd: exports.madd() === -(2 ** -46), dotOk: exports.dot() === 7 + 4 * -15 };
  } catch {
    return { supported: false, fusedMadd: false, dotOk: false };
  }
}

/**
 * The fastest build that keeps the caller's promise. Relaxed SIMD with a
 * fused madd is exact at full speed. Without it, exact results need the
 * plain build's double-precision emulation (only when `exact` is asked
 * for); otherwise the fast path multiplies, then adds, as wllama does.
 * `simd` forces a flavour (tests, benchmarks); forcing relaxed SIMD where
 * there is none is an error.
 */
export function chooseBuild(support: RelaxedSupport, exact: boolean, simd?: "relaxed" | "simd128"): BuildChoice {
  const relaxedUsable = support.supported && support.dotOk;
  if (simd === "relaxed") {
    if (!relaxedUsable) throw new Error("this browser's WebAssembly has no (working) relaxed SIMD");
    return { simd: "relaxed", exact: support.fusedMadd };
  }
  if (simd === "simd128") return { simd: "simd128", exact };
  if (relaxedUsable && (support.fusedMadd || !exact)) return { simd: "relaxed", exact: support.fusedMadd };
  return { simd: "simd128", exact };
}
