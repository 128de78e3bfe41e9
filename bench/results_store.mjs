// Where `make bench` keeps its reports: one file per host class in
// bench/results/, and bench/RESULTS.md, an index rebuilt from all of them
// with every target side by side across host classes. A speed target counts
// as met only when it holds on every host class we have run on, so a run on
// one host must not overwrite another's numbers (issue 32).
//
// A host class is the CPU vendor, family and model plus the widest vector
// ISA both engines use (avx512, avx2, other): what changes the kernels'
// speed, not the VM's size or the OS. A run of only some parts
// (BENCH_PARTS) is kept beside the full one, under the parts' names.
import fs from "node:fs";
import path from "node:path";

/** "amd-family26-model2-avx512": the file name of a machine's reports. */
export function hostClass(m) {
  const isa = m.flags.includes("avx512f") ? "avx512" : m.flags.includes("avx2") ? "avx2" : "other";
  const vendor = { GenuineIntel: "intel", AuthenticAMD: "amd" }[m.vendor] ?? (m.vendor || "cpu").toLowerCase().replace(/[^a-z0-9]+/g, "");
  return `${vendor}-family${m.family || "x"}-model${m.model || "x"}-${isa}`;
}

/** The report's file for this run: bench/results/<class>[.<parts>].md. */
export function reportFile(benchDir, m, parts, allParts) {
  const partial = allParts.some((p) => !parts.has(p));
  const suffix = partial ? `.${[...parts].sort().join("+")}` : "";
  return path.join(benchDir, "results", `${hostClass(m)}${suffix}.md`);
}

// The "## Targets" table of a report: [{ what, wanted, measured, met }].
function targetsOf(text) {
  const start = text.indexOf("\n## Targets\n");
  if (start < 0) return [];
  const end = text.indexOf("\n## ", start + 1);
  const rows = [];
  for (const line of text.slice(start, end < 0 ? undefined : end).split("\n")) {
    const cells = line.split("|").slice(1, -1).map((c) => c.trim());
    if (cells.length !== 4 || cells[0] === "target" || cells[0].startsWith("---")) continue;
    rows.push({ what: cells[0], wanted: cells[1], measured: cells[2], met: cells[3] });
  }
  return rows;
}

// What a report says of its run: the CPU line, date, commit and parts.
function headerOf(text) {
  const machine = text.slice(text.indexOf("\n## Machine\n"));
  const cell = (name) => (machine.match(new RegExp(`^\\| ${name} \\| (.*) \\|$`, "m")) ?? [])[1] ?? "?";
  return {
    cpu: cell("CPU").replace(/, \d+ logical cores.*/, ""),
    flags: cell("CPU flags"),
    smolinfer: cell("smolinfer").split(";")[0],
    date: (text.match(/on (\d{4}-\d\d-\d\dT[\d:]+Z)/) ?? [])[1] ?? "?",
    settings: cell("settings"),
  };
}

/** Rebuilds bench/RESULTS.md from every report in bench/results/. */
export function writeIndex(benchDir) {
  const dir = path.join(benchDir, "results");
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith(".md")).sort() : [];
  const reports = files.map((f) => {
    const text = fs.readFileSync(path.join(dir, f), "utf8");
    return { file: f, ...headerOf(text), targets: targetsOf(text) };
  });
  const lines = [];
  const L = (s = "") => lines.push(s);
  L("# smolinfer benchmarks, by host class");
  L();
  L("`make bench` writes its whole report to `bench/results/<host class>.md` (a run of only some parts:");
  L("`<host class>.<parts>.md`) and rebuilds this index from all of them. A host class is the CPU's vendor,");
  L("family and model and its widest vector ISA. A target is met only where it holds on every host class;");
  L("each number is a ratio measured side by side on that host, never across hosts.");
  L();
  L("| report | CPU | flags | smolinfer | date | settings |");
  L("|---|---|---|---|---|---|");
  for (const r of reports) L(`| [${r.file}](results/${r.file}) | ${r.cpu} | ${r.flags} | ${r.smolinfer} | ${r.date} | ${r.settings} |`);
  L();
  const names = [];
  for (const r of reports) for (const t of r.targets) if (!names.includes(t.what)) names.push(t.what);
  if (names.length) {
    L("## Targets on every host class");
    L();
    L("Each cell: measured (met?). Empty: not measured in that report.");
    L();
    L(`| target | wanted | ${reports.map((r) => r.file.replace(/\.md$/, "")).join(" | ")} |`);
    L(`|---|---|${reports.map(() => "---|").join("")}`);
    for (const what of names) {
      const wanted = reports.flatMap((r) => r.targets).find((t) => t.what === what).wanted;
      const cells = reports.map((r) => {
        const t = r.targets.find((x) => x.what === what);
        return t ? `${t.measured} (${t.met})` : "";
      });
      L(`| ${what} | ${wanted} | ${cells.join(" | ")} |`);
    }
    L();
  }
  fs.writeFileSync(path.join(benchDir, "RESULTS.md"), lines.join("\n"));
}
