// Firefox for the browser suites: Debian's firefox-esr driven by
// puppeteer-core over WebDriver BiDi, behind the part of playwright's Page
// and BrowserContext the suites use (goto, evaluate, waitForFunction, fill,
// click, selectOption, textContent, ...), so that one test file runs in
// either browser (harness.mjs picks by SMOLINFER_BROWSER). playwright's own
// Firefox is a patched build that cannot be installed here.
import puppeteer from "puppeteer-core";

// Playwright's visibility: an element with a box that is not visibility:hidden.
function visible(selector) {
  const el = document.querySelector(selector);
  if (!el) return false;
  const box = el.getBoundingClientRect();
  return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== "hidden";
}

function adapt(page) {
  const wrapper = {
    goto: (url) => page.goto(url),
    reload: () => page.reload(),
    close: () => page.close(),
    screenshot: (options) => page.screenshot(options),
    evaluate: (f, arg) => page.evaluate(f, arg),
    waitForFunction: (f, arg, options = {}) => page.waitForFunction(f, { timeout: options.timeout ?? 30_000, polling: 50 }, arg),
    waitForSelector: (selector, options = {}) => page.waitForSelector(selector, { timeout: options.timeout ?? 30_000 }),
    textContent: (selector) => page.$eval(selector, (el) => el.textContent),
    inputValue: (selector) => page.$eval(selector, (el) => el.value),
    isVisible: (selector) => page.evaluate(visible, selector),
    isHidden: async (selector) => !(await page.evaluate(visible, selector)),
    // Playwright's fill: the value replaced at once, then one input event.
    fill: (selector, value) =>
      page.$eval(
        selector,
        (el, v) => {
          el.focus();
          el.value = v;
          el.dispatchEvent(new Event("input", { bubbles: true }));
          el.dispatchEvent(new Event("change", { bubbles: true }));
        },
        value,
      ),
    click: (selector) => page.click(selector),
    check: async (selector) => {
      if (!(await page.$eval(selector, (el) => el.checked))) await page.click(selector);
    },
    selectOption: (selector, option) =>
      page.$eval(
        selector,
        (el, o) => {
          el.value = typeof o === "string" ? o : el.options[o.index].value;
          el.dispatchEvent(new Event("input", { bubbles: true }));
          el.dispatchEvent(new Event("change", { bubbles: true }));
        },
        option,
      ),
    setInputFiles: async (selector, files) => {
      const input = await page.$(selector);
      await input.uploadFile(...files);
    },
    $eval: (selector, f, arg) => page.$eval(selector, f, arg),
    $$eval: (selector, f, arg) => page.$$eval(selector, f, arg),
    locator: (selector) => ({ count: () => page.$$eval(selector, (els) => els.length) }),
    on: (event, handler) => {
      if (event === "pageerror") page.on("pageerror", (e) => handler(e instanceof Error ? e : new Error(String(e))));
      else if (event === "request") page.on("request", (r) => handler({ url: () => r.url() }));
      else page.on(event, handler);
      return wrapper;
    },
  };
  return wrapper;
}

/** A fresh Firefox profile as a playwright-like BrowserContext ({ newPage, close }). */
export async function launchFirefoxContext(profile) {
  const browser = await puppeteer.launch({
    browser: "firefox",
    executablePath: process.env.FIREFOX ?? "/usr/bin/firefox-esr",
    headless: true,
    userDataDir: profile,
  });
  return {
    newPage: async () => adapt(await browser.newPage()),
    close: () => browser.close(),
  };
}
