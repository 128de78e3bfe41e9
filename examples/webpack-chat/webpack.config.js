// webpack's defaults: an entry and an output, nothing for smolinfer.
import path from "node:path";
import { fileURLToPath } from "node:url";

export default {
  mode: "production",
  entry: "./src/main.js",
  output: { path: path.join(path.dirname(fileURLToPath(import.meta.url)), "dist"), filename: "main.js" },
};
