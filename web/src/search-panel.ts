// The demo page's semantic search: paragraphs and a question become
// embeddings (engine.embeddings.create), and the paragraphs are ranked by
// cosine similarity to the question (a dot product: the vectors are unit
// length). The paragraphs' vectors are kept until their text or the model
// changes, so a second question embeds only itself.
import type { Engine } from "./smolinfer.js";

const SAMPLE = [
  "The Eiffel Tower was finished in 1889 for the World's Fair in Paris. It is 330 metres tall.",
  "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen in the leaves of plants.",
  "A sourdough starter is flour and water left to ferment; its wild yeast makes the bread rise.",
  "The Rust compiler checks at compile time that no two parts of a program change the same memory at once.",
].join("\n\n");

interface Ui {
  docs: HTMLTextAreaElement;
  query: HTMLInputElement;
  go: HTMLButtonElement;
  results: HTMLOListElement;
  stats: HTMLElement;
}

export interface SearchPanel {
  /** Whether a model is loaded and nothing else runs (the button's state). */
  setReady(ready: boolean): void;
  /** The model changed: the kept vectors are no longer its. */
  reset(): void;
}

export function searchPanel(ui: Ui, engine: () => Engine | null, busy: (running: boolean) => void, fail: (e: unknown) => void): SearchPanel {
  let kept = new Map<string, number[]>();
  ui.docs.value = SAMPLE;
  const paragraphs = () =>
    ui.docs.value
      .split(/\n\s*\n/)
      .map((p) => p.trim())
      .filter(Boolean);

  async function search(): Promise<void> {
    const e = engine();
    const query = ui.query.value.trim();
    const docs = paragraphs();
    if (!e || !query || docs.length === 0) return;
    busy(true);
    ui.results.replaceChildren();
    const t0 = performance.now();
    try {
      const missing = docs.filter((d) => !kept.has(d));
      const r = await e.embeddings.create({ input: [...missing, query] });
      const vectors = r.data.map((d) => d.embedding as number[]);
      missing.forEach((d, i) => kept.set(d, vectors[i]));
      const q = vectors[vectors.length - 1];
      const ranked = docs
        .map((d) => ({ d, score: kept.get(d)!.reduce((s, x, i) => s + x * q[i], 0) }))
        .sort((a, b) => b.score - a.score);
      for (const { d, score } of ranked) {
        const li = document.createElement("li");
        const s = document.createElement("span");
        s.className = "score";
        s.textContent = score.toFixed(3);
        li.append(s, " ", d);
        ui.results.append(li);
      }
      const seconds = (performance.now() - t0) / 1000;
      ui.stats.textContent = `${missing.length + 1} texts embedded (${r.usage.prompt_tokens} tokens) in ${seconds.toFixed(2)} s`;
    } catch (err) {
      fail(err);
    } finally {
      busy(false);
    }
  }

  ui.go.addEventListener("click", () => void search());
  ui.query.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      void search();
    }
  });
  return {
    setReady: (ready) => (ui.go.disabled = !ready),
    reset: () => {
      kept = new Map();
      ui.results.replaceChildren();
      ui.stats.textContent = "";
    },
  };
}
