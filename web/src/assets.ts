// Every file the engine may need, each named by `new URL("./literal",
// import.meta.url)`: the form Vite, webpack and other bundlers recognize,
// copy into the app's output with their defaults and rewrite to the copy's
// URL. Naming a file fetches nothing: the worker fetches only the build it
// picks. The worker (worker.js) is one self-contained file, so a bundler
// copies it as it is instead of bundling it again.
import type { BuildName, WasmAssets } from "./protocol.js";

export const workerUrl = (): string => new URL("./worker.js", import.meta.url).href;

export function wasmAssets(): Record<BuildName, WasmAssets> {
  return {
    "st-simd128": {
      glue: new URL("./wasm/smolinfer-st.js", import.meta.url).href,
      wasm: new URL("./wasm/smolinfer-st.wasm", import.meta.url).href,
    },
    "st-relaxed": {
      glue: new URL("./wasm/smolinfer-st-relaxed.js", import.meta.url).href,
      wasm: new URL("./wasm/smolinfer-st-relaxed.wasm", import.meta.url).href,
    },
    "mt-simd128": {
      glue: new URL("./wasm/smolinfer-mt.js", import.meta.url).href,
      wasm: new URL("./wasm/smolinfer-mt.wasm", import.meta.url).href,
      pthread: new URL("./wasm/smolinfer-mt.worker.js", import.meta.url).href,
    },
    "mt-relaxed": {
      glue: new URL("./wasm/smolinfer-mt-relaxed.js", import.meta.url).href,
      wasm: new URL("./wasm/smolinfer-mt-relaxed.wasm", import.meta.url).href,
      pthread: new URL("./wasm/smolinfer-mt-relaxed.worker.js", import.meta.url).href,
    },
  };
}
