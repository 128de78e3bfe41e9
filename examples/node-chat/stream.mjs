// @ts-check
// Streams a chat completion from a GGUF model in Node.js (>= 20):
//   node stream.mjs MODEL [PROMPT] [MAX_TOKENS]
// MODEL is a path, or an http(s) URL (downloaded once into the cache
// directory, ~/.cache/smolinfer/downloads). Greedy, so the answer is the one
// `smolinfer run -m MODEL --chat -p PROMPT -n MAX_TOKENS --temp 0` prints.
// The script ends by itself once the answer is out.
import { createEngine } from "smolinfer";

const [model, prompt = "Why is the sky blue?", maxTokens = "128"] = process.argv.slice(2);
if (!model) {
  console.error("usage: node stream.mjs MODEL [PROMPT] [MAX_TOKENS]");
  process.exit(2);
}

const engine = await createEngine({ exact: true });
const info = await engine.load(model, {
  onProgress: (p) => process.stderr.write(`\r${p.phase}: ${(p.loaded / 1e6).toFixed(0)} MB   `),
});
console.error(`\r${info.name}: ${info.quantization}, ${info.threads} thread(s), ${engine.build}`);

const stream = await engine.chat.completions.create({
  messages: [{ role: "user", content: prompt }],
  stream: true,
  temperature: 0,
  max_tokens: Number(maxTokens),
});
for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? "");
process.stdout.write("\n");
await engine.unload();
