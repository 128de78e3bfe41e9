// The browsers the tests drive, each as a playwright BrowserContext with a
// fresh profile: Debian's Chromium through playwright-core, Debian's Firefox
// ESR started without a WebDriver, behind the same interface (firefox-page.mjs).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { chromium } from "playwright-core";

import { launchFirefoxContext } from "./firefox-page.mjs";

/** The browsers a suite that runs in several runs in (SMOLINFER_BROWSERS, default both). */
export const BROWSERS = (process.env.SMOLINFER_BROWSERS ?? "chromium,firefox").split(",").filter(Boolean);

/** The browser of a suite that runs in one (SMOLINFER_BROWSER, default chromium). */
export const BROWSER = process.env.SMOLINFER_BROWSER ?? "chromium";

const chromiumArgs = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"];

/** Starts `name` ("chromium" or "firefox") headless: { context, close() }. */
export async function launchBrowser(name) {
  if (name !== "chromium" && name !== "firefox") throw new Error(`no browser named ${name} (chromium, firefox)`);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), `smolinfer-${name}-`));
  const context =
    name === "chromium"
      ? await chromium.launchPersistentContext(profile, {
          executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
          headless: true,
          viewport: { width: 1100, height: 900 },
          args: chromiumArgs,
        })
      : await launchFirefoxContext(profile);
  return {
    name,
    context,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
