// The statistics the benchmark reports: the median and a percentile of
// finite values (NaN when there is none, so a missing measurement never
// looks like a number).
const sorted = (values) => (values ?? []).filter((x) => Number.isFinite(x)).sort((a, b) => a - b);

export function median(values) {
  const s = sorted(values);
  if (!s.length) return NaN;
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/** The nearest-rank percentile, p in (0, 1]: the smallest value at least a share p of the values do not exceed. */
export function percentile(values, p) {
  const s = sorted(values);
  if (!s.length) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
}
