// Models downloaded under Node.js, kept in the command-line tool's cache
// directory ($SMOLINFER_CACHE, else $XDG_CACHE_HOME/smolinfer, else
// ~/.cache/smolinfer), in downloads/: the same entries as the browser's
// store (stored-model.ts), so a saved copy is found by its URL and checked
// against its SHA-256 on every read. A write goes to a ".part" file of its
// own process with its record beside it; the file is renamed into place,
// then the record. The sweep leaves the parts of a running process alone.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import {
  ENTRY_NAME,
  type ModelStore,
  SAVE_SLICE,
  type SavedCopy,
  type SavedReader,
  type StoredModel,
  inCompleteEntry,
  isRecord,
  keyFor,
} from "./stored-model.js";

export function cacheDirectory(): string {
  const env = process.env;
  const base = env.SMOLINFER_CACHE || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "smolinfer");
  return path.join(base, "downloads");
}

function readRecord(dir: string, key: string): StoredModel | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, `${key}.json`), "utf8")) as StoredModel;
  } catch {
    return null;
  }
}

function remove(dir: string, key: string): void {
  for (const name of [`${key}.json`, `${key}.gguf`]) fs.rmSync(path.join(dir, name), { force: true });
}

function openReader(file: string): SavedReader {
  const fd = fs.openSync(file, "r");
  return {
    read: (into, at) => fs.readSync(fd, into, 0, into.length, at),
    close: () => fs.closeSync(fd),
  };
}

async function lookup(url: string): Promise<SavedCopy | null> {
  const dir = cacheDirectory();
  const key = keyFor(url);
  const record = readRecord(dir, key);
  if (!record) return null;
  if (!isRecord(record, key) || record.url !== url) {
    remove(dir, key);
    return null;
  }
  const file = path.join(dir, `${key}.gguf`);
  try {
    if (fs.statSync(file).size !== record.size) {
      remove(dir, key);
      return null;
    }
    return { record, file: await fs.openAsBlob(file), open: async () => openReader(file) };
  } catch {
    remove(dir, key);
    return null;
  }
}

async function store(
  url: string,
  size: number,
  sha256: string,
  read: (offset: number, length: number) => Uint8Array,
  onProgress: (written: number) => void,
): Promise<string | null> {
  const dir = cacheDirectory();
  const key = keyFor(url);
  const part = path.join(dir, `${key}.${process.pid}.part`);
  const recordPart = path.join(dir, `${key}.${process.pid}.json.part`);
  try {
    fs.mkdirSync(dir, { recursive: true });
    remove(dir, key);
    const fd = fs.openSync(part, "w");
    try {
      for (let offset = 0; offset < size; offset += SAVE_SLICE) {
        const bytes = read(offset, Math.min(SAVE_SLICE, size - offset));
        for (let written = 0; written < bytes.length; ) {
          written += fs.writeSync(fd, bytes, written, bytes.length - written, offset + written);
        }
        onProgress(offset + bytes.length);
      }
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    const record: StoredModel = { url, size, sha256, savedAt: new Date().toISOString() };
    fs.writeFileSync(recordPart, JSON.stringify(record));
    fs.renameSync(part, path.join(dir, `${key}.gguf`));
    fs.renameSync(recordPart, path.join(dir, `${key}.json`));
    return null;
  } catch (e) {
    fs.rmSync(part, { force: true });
    fs.rmSync(recordPart, { force: true });
    remove(dir, key);
    return `cannot write to ${dir}: ${e instanceof Error ? e.message : String(e)}`;
  }
}

async function discard(url: string): Promise<void> {
  remove(cacheDirectory(), keyFor(url));
}

function names(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

async function clear(): Promise<void> {
  const dir = cacheDirectory();
  for (const name of names(dir)) fs.rmSync(path.join(dir, name), { force: true });
}

// A ".part" file of a process that is still running is a write in progress.
function writerAlive(name: string): boolean {
  const pid = Number(/\.(\d+)\.(json\.)?part$/.exec(name)?.[1]);
  if (!pid || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function sweepPartials(): Promise<void> {
  const dir = cacheDirectory();
  const all = names(dir);
  const size = (key: string) => fs.statSync(path.join(dir, `${key}.gguf`), { throwIfNoEntry: false })?.size ?? null;
  for (const name of all) {
    if (await inCompleteEntry(name, all, (key) => readRecord(dir, key), size)) continue;
    // A part, or a file whose record is still being written, of a running writer.
    const key = name.match(ENTRY_NAME)?.[1];
    if (writerAlive(name) || (key && name.endsWith(".gguf") && all.some((n) => n.startsWith(`${key}.`) && writerAlive(n)))) continue;
    fs.rmSync(path.join(dir, name), { force: true });
  }
}

export const nodeModelStore: ModelStore = { lookup, store, discard, clear, sweepPartials };
