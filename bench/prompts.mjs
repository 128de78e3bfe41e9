// Prompts of exactly N tokens for the browser benchmark, cut at word
// boundaries from the English text in tests/golden/perplexity.txt, each
// starting at a different word (so that its first token differs from the
// previous prompt's and no engine can reuse a cached prefix). Token counts
// come from smolinfer's tokenizer (the native CLI), which matches
// llama.cpp's exactly (tests/golden/<model>/tokenizer.json).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const textFile = path.join(here, "..", "tests", "golden", "perplexity.txt");

function tokenizeMany(cli, model, texts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "smolinfer-bench-"));
  try {
    const file = path.join(dir, "texts.jsonl");
    fs.writeFileSync(file, texts.map((t) => JSON.stringify(t)).join("\n") + "\n");
    const out = execFileSync(cli, ["tokenize", "-m", model, "--jsonl", file, "--no-special"], {
      encoding: "utf8",
      maxBuffer: 64 << 20,
    });
    return out.trim().split("\n").map((l) => JSON.parse(l));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** count prompts of `tokens` tokens: [{ text, ids }], with .lead: the leading tokens they all share (BOS) */
export function makePrompts(cli, model, count, tokens) {
  const words = fs.readFileSync(textFile, "utf8").split(/\s+/).filter(Boolean);
  // The tokens the tokenizer puts before any text (Gemma's BOS; none for
  // SmolLM2): the first token of the text comes after them.
  const [a, b] = tokenizeMany(cli, model, ["alpha", "zebra"]);
  let lead = 0;
  while (lead < a.length && a[lead] === b[lead]) lead++;
  const prompts = [];
  let start = 0;
  const stride = 23;
  while (prompts.length < count) {
    if (start + tokens * 2 > words.length) throw new Error(`prompts: ${textFile} is too short for ${count} prompts of ${tokens} tokens`);
    // Candidate lengths in words around the expected size.
    const candidates = [];
    for (let n = Math.floor(tokens * 0.4); n <= Math.min(tokens * 2, words.length - start); n++) {
      candidates.push(words.slice(start, start + n).join(" "));
    }
    const ids = tokenizeMany(cli, model, candidates);
    const i = ids.findIndex((x) => x.length === tokens);
    const previous = prompts.at(-1);
    if (i >= 0 && (!previous || previous.ids[lead] !== ids[i][lead])) prompts.push({ text: candidates[i], ids: ids[i] });
    start += stride;
  }
  prompts.lead = lead;
  return prompts;
}
