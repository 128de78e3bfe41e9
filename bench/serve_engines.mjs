// The two HTTP servers the serving benchmark compares, and how to start and
// stop one. Each engine is a name plus its command line; both speak the
// same OpenAI API, take port 0 (a free port, printed on a line "listening on
// http://HOST:PORT") and answer GET /health with 200 once the model is
// loaded.
import { spawn, spawnSync } from "node:child_process";

export const OURS = "smolinfer";
export const THEIRS = "llama.cpp";

/**
 * The command line of each engine for the same model, threads, slots and
 * context per sequence. `smolinfer serve -c` is the context of one
 * sequence; llama-server's -c is the total its --parallel slots share
 * (each gets -c / --parallel), so it gets ctx × parallel.
 */
export function engineCommands({ smolinfer, llamaServer, model, threads, parallel, ctx }) {
  const common = ["-m", model, "-t", String(threads), "--parallel", String(parallel), "--host", "127.0.0.1", "--port", "0"];
  return {
    [OURS]: [smolinfer, ["serve", ...common, "-c", String(ctx)]],
    // -fa off: flash attention off, as in the native benchmark (smolinfer's
    // exact mode); --no-webui: the benchmark only speaks the API.
    // Continuous batching is llama-server's default.
    [THEIRS]: [llamaServer, [...common, "-c", String(ctx * parallel), "-fa", "off", "--no-webui"]],
  };
}

/** Whether this smolinfer binary has the `serve` command (it lands after this benchmark). */
export function hasServe(smolinfer) {
  const r = spawnSync(smolinfer, ["serve", "--help"], { encoding: "utf8" });
  return r.status === 0;
}

/**
 * Starts a server and resolves to { url, stop, output, pid, exitStatus }
 * once /health answers 200; rejects (after stopping it) if it exits or is
 * not ready in `timeoutMs`. `stop()` sends SIGTERM, then SIGKILL after
 * 10 s, and resolves to the exit code (or the signal's name);
 * `exitStatus()` is that, or null while the server runs.
 */
export async function startServer([cmd, args], { timeoutMs = 120_000, log = () => {} } = {}) {
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  let exited = null;
  let url = null;
  const found = new Promise((resolve) => {
    const scan = (chunk) => {
      output += chunk;
      if (output.length > 1 << 20) output = output.slice(-(1 << 19)); // keep the tail of a chatty server
      const m = !url && output.match(/listening on (http:\/\/[^\s/]+)/);
      if (m) resolve((url = m[1]));
    };
    child.stdout.setEncoding("utf8").on("data", scan);
    child.stderr.setEncoding("utf8").on("data", scan);
  });
  // A program that cannot be started emits "error" and no "exit".
  const gone = new Promise((resolve) => {
    child.on("exit", (code, signal) => resolve((exited = signal ?? code)));
    child.on("error", (e) => resolve((exited = e.message)));
  });

  const stop = async () => {
    if (exited !== null) return exited;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await gone;
    clearTimeout(timer);
    return exited;
  };
  const tail = () => output.trim().split("\n").slice(-5).join(" | ");

  const deadline = Date.now() + timeoutMs;
  const expired = () => new Promise((resolve) => setTimeout(() => resolve("timeout"), Math.max(0, deadline - Date.now())));
  const first = await Promise.race([found, gone.then(() => "exit"), expired()]);
  if (first === "exit" || first === "timeout") {
    await stop();
    throw new Error(`${cmd} ${first === "exit" ? `exited (${exited})` : `printed no "listening on" in ${timeoutMs / 1000} s`}: ${tail()}`);
  }
  log(`started ${cmd} ${args.join(" ")} at ${url}`);
  while (Date.now() < deadline && exited === null) {
    try {
      const r = await fetch(`${url}/health`);
      if (r.status === 200) return { url, stop, output: () => output, pid: child.pid, exitStatus: () => exited };
    } catch {
      // not accepting connections yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  await stop();
  throw new Error(`${cmd}: /health did not answer 200 (${exited !== null ? `exited ${exited}` : "timeout"}): ${tail()}`);
}
