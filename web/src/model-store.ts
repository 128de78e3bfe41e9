// Models kept in the Origin Private File System between visits, keyed by
// their URL. A file is written as "<key>.part", then renamed, then its
// record is written; only a complete record counts, so an interrupted or
// failed write never leaves a usable-looking entry behind.

export interface StoredModel {
  url: string;
  size: number;
  sha256: string;
  savedAt: string;
}

const DIR = "smolinfer-models";

async function directory(): Promise<FileSystemDirectoryHandle | null> {
  if (!("storage" in navigator) || !navigator.storage.getDirectory) return null;
  try {
    const root = await navigator.storage.getDirectory();
    return await root.getDirectoryHandle(DIR, { create: true });
  } catch {
    return null; // no OPFS (private browsing, old browser): run without a cache
  }
}

// A short, file-name-safe key for a URL (FNV-1a, 64 bits).
export function keyFor(url: string): string {
  let h = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(url)) {
    h ^= BigInt(byte);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, "0");
}

async function readRecord(dir: FileSystemDirectoryHandle, key: string): Promise<StoredModel | null> {
  try {
    const file = await (await dir.getFileHandle(`${key}.json`)).getFile();
    return JSON.parse(await file.text()) as StoredModel;
  } catch {
    return null;
  }
}

/** The stored copy of `url`, if complete and of the expected size. */
export async function lookup(url: string): Promise<{ record: StoredModel; file: File } | null> {
  const dir = await directory();
  if (!dir) return null;
  const key = keyFor(url);
  const record = await readRecord(dir, key);
  if (!record || record.url !== url) return null;
  try {
    const file = await (await dir.getFileHandle(`${key}.gguf`)).getFile();
    if (file.size !== record.size) {
      await remove(dir, key);
      return null;
    }
    return { record, file };
  } catch {
    await remove(dir, key);
    return null;
  }
}

async function remove(dir: FileSystemDirectoryHandle, key: string): Promise<void> {
  for (const name of [`${key}.json`, `${key}.gguf`, `${key}.part`]) {
    try {
      await dir.removeEntry(name);
    } catch {
      // not there
    }
  }
}

/**
 * Stores `size` bytes that `read(offset, n)` copies out (in slices, so that
 * the model never exists twice in JavaScript memory). Any failure removes
 * what was written and is reported, never thrown: the model is loaded
 * either way.
 */
export async function store(
  url: string,
  size: number,
  sha256: string,
  read: (offset: number, length: number) => Uint8Array,
  onProgress: (written: number) => void,
): Promise<string | null> {
  const dir = await directory();
  if (!dir) return "no persistent storage in this browser";
  const key = keyFor(url);
  await remove(dir, key);
  try {
    const part = await dir.getFileHandle(`${key}.part`, { create: true });
    const access = await part.createSyncAccessHandle();
    try {
      const slice = 8 << 20;
      for (let offset = 0; offset < size; offset += slice) {
        const bytes = read(offset, Math.min(slice, size - offset));
        let written = 0;
        while (written < bytes.length) {
          written += access.write(bytes.subarray(written), { at: offset + written });
        }
        onProgress(offset + bytes.length);
      }
      access.flush();
    } finally {
      access.close();
    }
    await (part as unknown as { move(name: string): Promise<void> }).move(`${key}.gguf`);
    const record: StoredModel = { url, size, sha256, savedAt: new Date().toISOString() };
    const meta = await (await dir.getFileHandle(`${key}.json`, { create: true })).createSyncAccessHandle();
    try {
      const text = new TextEncoder().encode(JSON.stringify(record));
      meta.truncate(0);
      meta.write(text, { at: 0 });
      meta.flush();
    } finally {
      meta.close();
    }
    return null;
  } catch (e) {
    await remove(dir, key);
    return e instanceof Error ? e.message : String(e);
  }
}

/** Removes every stored model and any leftover partial file. */
export async function clear(): Promise<void> {
  const dir = await directory();
  if (!dir) return;
  const names: string[] = [];
  for await (const name of (dir as unknown as { keys(): AsyncIterable<string> }).keys()) names.push(name);
  for (const name of names) await dir.removeEntry(name).catch(() => undefined);
}

/** Removes partial files a closed page left behind (they are never read). */
export async function sweepPartials(): Promise<void> {
  const dir = await directory();
  if (!dir) return;
  const names: string[] = [];
  for await (const name of (dir as unknown as { keys(): AsyncIterable<string> }).keys()) names.push(name);
  for (const name of names) {
    if (name.endsWith(".part")) await dir.removeEntry(name).catch(() => undefined);
  }
  // A record whose file is missing is as good as nothing.
  for (const name of names) {
    if (!name.endsWith(".json")) continue;
    const key = name.slice(0, -5);
    if (!names.includes(`${key}.gguf`)) await dir.removeEntry(name).catch(() => undefined);
  }
}
