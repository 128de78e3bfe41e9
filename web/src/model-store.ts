// Models kept in the Origin Private File System between visits, keyed by
// their URL. A file is written as "<key>.part", then renamed, then its
// record is written; only a complete record counts, so an interrupted or
// failed write never leaves a usable-looking entry behind. Leftovers of an
// interrupted write (a closed page) are swept when an engine starts, and a
// saved copy is checked against its recorded SHA-256 every time it is read
// (by the worker). Writers, the sweep and clear() hold one Web Lock, so two
// pages of the same origin never sweep each other's write in progress.

import {
  SAVE_SLICE,
  type SavedCopy,
  type SavedReader,
  type StoredModel,
  inCompleteEntry,
  isRecord,
  keyFor,
} from "./stored-model.js";

const DIR = "smolinfer-models";
const LOCK = "smolinfer-models";

// Runs `f` holding the store's lock (or without, where Web Locks are missing).
// With `ifAvailable`, skips `f` when another page holds it.
async function locked<T>(f: () => Promise<T>, ifAvailable = false): Promise<T | null> {
  const locks = (navigator as { locks?: LockManager }).locks;
  if (!locks) return f();
  return locks.request(LOCK, { ifAvailable }, (lock) => (lock ? f() : null));
}

async function directory(): Promise<FileSystemDirectoryHandle | null> {
  if (!("storage" in navigator) || !navigator.storage.getDirectory) return null;
  try {
    const root = await navigator.storage.getDirectory();
    return await root.getDirectoryHandle(DIR, { create: true });
  } catch {
    return null; // no OPFS (private browsing, old browser): run without a cache
  }
}

async function readRecord(dir: FileSystemDirectoryHandle, key: string): Promise<StoredModel | null> {
  try {
    const file = await (await dir.getFileHandle(`${key}.json`)).getFile();
    return JSON.parse(await file.text()) as StoredModel;
  } catch {
    return null;
  }
}

// A sync access handle reads into the caller's buffer. "read-only" lets
// several pages read one file at once where the browser knows the mode;
// elsewhere a second reader fails to open it and streams the file instead.
async function openReader(handle: FileSystemFileHandle): Promise<SavedReader | null> {
  try {
    const access = await (
      handle as unknown as { createSyncAccessHandle(o: object): Promise<FileSystemSyncAccessHandle> }
    ).createSyncAccessHandle({ mode: "read-only" });
    return { read: (into, at) => access.read(into, { at }), close: () => access.close() };
  } catch {
    return null;
  }
}

/** The stored copy of `url`, if complete and of the expected size. */
export async function lookup(url: string): Promise<SavedCopy | null> {
  const dir = await directory();
  if (!dir) return null;
  const key = keyFor(url);
  const record = await readRecord(dir, key);
  if (!record) return null;
  if (!isRecord(record, key) || record.url !== url) {
    await remove(dir, key);
    return null;
  }
  try {
    const handle = await dir.getFileHandle(`${key}.gguf`);
    const file = await handle.getFile();
    if (file.size !== record.size) {
      await remove(dir, key);
      return null;
    }
    return { record, file, open: () => openReader(handle) };
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
  return (await locked(() => write(dir, url, size, sha256, read, onProgress))) ?? null;
}

async function write(
  dir: FileSystemDirectoryHandle,
  url: string,
  size: number,
  sha256: string,
  read: (offset: number, length: number) => Uint8Array,
  onProgress: (written: number) => void,
): Promise<string | null> {
  const key = keyFor(url);
  await remove(dir, key);
  try {
    const part = await dir.getFileHandle(`${key}.part`, { create: true });
    const access = await part.createSyncAccessHandle();
    try {
      const slice = SAVE_SLICE;
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

/** Deletes the saved copy of `url` (it was found damaged). */
export async function discard(url: string): Promise<void> {
  const dir = await directory();
  if (dir) await locked(() => remove(dir, keyFor(url)));
}

async function names(dir: FileSystemDirectoryHandle): Promise<string[]> {
  const list: string[] = [];
  for await (const name of (dir as unknown as { keys(): AsyncIterable<string> }).keys()) list.push(name);
  return list;
}

/** Removes every stored model and any leftover partial file. */
export async function clear(): Promise<void> {
  const dir = await directory();
  if (!dir) return;
  await locked(async () => {
    for (const name of await names(dir)) await dir.removeEntry(name).catch(() => undefined);
  });
}

/**
 * Removes what an interrupted write left behind: partial files, a record
 * without its file or a file without its record, a record that does not
 * parse or does not match its file's size, and anything else in the
 * directory. Only complete entries stay. Skipped while another page writes.
 */
export async function sweepPartials(): Promise<void> {
  const dir = await directory();
  if (!dir) return;
  await locked(async () => {
    const all = await names(dir);
    const size = (key: string) =>
      dir.getFileHandle(`${key}.gguf`).then((h) => h.getFile()).then((f) => f.size, () => null);
    for (const name of all) {
      if (await inCompleteEntry(name, all, (key) => readRecord(dir, key), size)) continue;
      await dir.removeEntry(name).catch(() => undefined);
    }
  }, true);
}
