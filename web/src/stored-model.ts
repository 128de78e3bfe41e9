// What a saved model's record holds, and the rules both model stores share:
// the browser's OPFS store (model-store.ts) and Node's cache directory
// (node-model-store.ts). A model is saved as "<key>.part", renamed to
// "<key>.gguf", then its record "<key>.json" is written; only a complete
// record whose file has its size counts.

export interface StoredModel {
  url: string;
  size: number;
  sha256: string;
  savedAt: string;
}

/** A saved copy opened for reading in place (no stream of fresh chunks). */
export interface SavedReader {
  /** Fills `into` from byte `at` of the file; returns the bytes read. */
  read(into: Uint8Array, at: number): number;
  close(): void;
}

/** A complete saved copy: its record and file, and a reader where the store has one. */
export interface SavedCopy {
  record: StoredModel;
  file: Blob;
  /** Null when the file cannot be opened so (read file.stream() instead). */
  open?(): Promise<SavedReader | null>;
}

/** What the engine's worker needs of a model store. */
export interface ModelStore {
  /** The saved copy of `url`, if complete and of the recorded size. */
  lookup(url: string): Promise<SavedCopy | null>;
  /**
   * Saves `size` bytes that `read(offset, n)` copies out, in slices (the
   * model never exists twice in memory; the slice `read` returns may be
   * reused by the next call). A failure removes what was written and is
   * returned as text, never thrown: the model is loaded either way.
   */
  store(
    url: string,
    size: number,
    sha256: string,
    read: (offset: number, length: number) => Uint8Array,
    onProgress: (written: number) => void,
  ): Promise<string | null>;
  /** Deletes the saved copy of `url` (it was found damaged). */
  discard(url: string): Promise<void>;
  /** Removes every saved model and any leftover partial file. */
  clear(): Promise<void>;
  /** Removes what an interrupted write left behind; only complete entries stay. */
  sweepPartials(): Promise<void>;
}

/** Bytes written per slice when a model is saved. */
export const SAVE_SLICE = 8 << 20;

// A short, file-name-safe key for a URL (FNV-1a, 64 bits).
export function keyFor(url: string): string {
  let h = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(url)) {
    h ^= BigInt(byte);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, "0");
}

export function isRecord(r: unknown, key: string): r is StoredModel {
  const m = r as StoredModel | null;
  return (
    !!m &&
    typeof m.url === "string" &&
    keyFor(m.url) === key &&
    Number.isSafeInteger(m.size) &&
    m.size > 0 &&
    typeof m.sha256 === "string" &&
    /^[0-9a-f]{64}$/.test(m.sha256)
  );
}

/** The entry names of a store's directory: "<key>.json" and "<key>.gguf" of complete entries. */
export const ENTRY_NAME = /^([0-9a-f]{16})\.(json|gguf)$/;

/**
 * Whether `name`, one of a store directory's names `all`, belongs to a
 * complete entry: a valid record (read by `record`) and its file, of the
 * recorded size (read by `size`; null when it cannot be). What the sweeps
 * keep.
 */
export async function inCompleteEntry(
  name: string,
  all: string[],
  record: (key: string) => Promise<StoredModel | null> | StoredModel | null,
  size: (key: string) => Promise<number | null> | number | null,
): Promise<boolean> {
  const key = name.match(ENTRY_NAME)?.[1];
  if (!key || !all.includes(`${key}.gguf`)) return false;
  const r = await record(key);
  return isRecord(r, key) && (await size(key)) === r.size;
}
