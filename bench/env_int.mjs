// An integer setting from the environment, for the benchmark and soak
// scripts: the fallback when unset or empty, else the value, which must be
// an integer of at least `min` (throws, naming the variable, if not).
export function envInt(env, name, fallback, min = 1) {
  const v = env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) {
    throw new Error(`${name} must be ${min === 1 ? "a positive integer" : `an integer >= ${min}`}, not "${v}"`);
  }
  return n;
}
