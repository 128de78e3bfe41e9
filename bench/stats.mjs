// The one statistic the benchmark reports: the median of finite values
// (NaN when there is none, so a missing measurement never looks like a number).
export function median(values) {
  const s = (values ?? []).filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}
