// Firefox for the browser suites, with no WebDriver: Debian's firefox-esr
// started on its own, its traffic sent through a proxy in this process that
// writes a small agent into every HTML page. The agent takes commands over
// plain HTTP (long polls on the page's own origin, so isolated pages need no
// CORS), and the proxy sees every request, workers' included. Behind it sits
// the part of playwright's Page and BrowserContext the suites use (goto,
// evaluate, waitForFunction, fill, click, selectOption, setInputFiles, ...),
// so that one test file runs in either browser (browsers.mjs).
//
// Why not puppeteer-core over WebDriver BiDi: Firefox's BiDi agent listens
// for every worker's registration, and with it about one threaded engine
// start in six blocked for good inside the engine worker's `new Worker()`
// for its second thread. A Firefox nobody attaches to never did.
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

const AGENT_PATH = "/__smolinfer_agent/";
const POLL_MS = 20_000;

// Runs in every page. Its page id survives reloads and same-origin
// navigations in sessionStorage; a new document asks the driver who it is.
function agent(prefix) {
  if (window.__smolinferAgent) return;
  window.__smolinferAgent = true;
  const send = (what, body) =>
    fetch(prefix + what, { method: "POST", body: JSON.stringify(body), keepalive: true }).then((r) => r.json());
  const doc = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  let page = sessionStorage.getItem("smolinfer-agent-page");
  const early = [];
  const report = (event) => (page ? send("event", { page, doc, ...event }) : early.push(event));
  addEventListener("error", (e) => report({ type: "pageerror", message: e.message }));
  addEventListener("unhandledrejection", (e) => report({ type: "pageerror", message: String(e.reason?.message ?? e.reason) }));
  const consoleError = console.error.bind(console);
  console.error = (...args) => {
    report({ type: "console", level: "error", message: args.map(String).join(" ") });
    consoleError(...args);
  };
  async function run(command) {
    try {
      const f = (0, eval)(`(${command.fn})`);
      const value = await f(command.arg);
      await send("done", { page, doc, id: command.id, ok: true, value: value === undefined ? null : value });
    } catch (e) {
      await send("done", { page, doc, id: command.id, ok: false, error: String(e?.message ?? e) });
    }
  }
  async function start() {
    ({ page } = await send("hello", { page, doc, url: location.href }));
    if (!page) return; // a document no test opened
    sessionStorage.setItem("smolinfer-agent-page", page);
    for (const event of early.splice(0)) report(event);
    for (;;) {
      let response;
      try {
        response = await fetch(`${prefix}next?page=${page}&doc=${doc}`);
      } catch {
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      if (response.status === 410) return; // this document is no longer the page's
      if (response.status === 200) run(await response.json());
    }
  }
  if (document.readyState === "complete") start();
  else addEventListener("load", start);
}

const agentScript = `<script>(${agent})(${JSON.stringify(AGENT_PATH)});</script>`;

function withAgent(html) {
  const head = html.search(/<head[^>]*>/i);
  if (head < 0) return agentScript + html;
  const end = html.indexOf(">", head) + 1;
  return html.slice(0, end) + agentScript + html.slice(end);
}

// Playwright's visibility: an element with a box that is not visibility:hidden.
function visible(selector) {
  const el = document.querySelector(selector);
  if (!el) return false;
  const box = el.getBoundingClientRect();
  return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== "hidden";
}

const hopByHop = new Set(["connection", "keep-alive", "proxy-connection", "proxy-authorization", "transfer-encoding", "upgrade", "te"]);
const endToEnd = (headers) => Object.fromEntries(Object.entries(headers).filter(([k]) => !hopByHop.has(k.toLowerCase())));

class Driver {
  pages = new Map(); // id -> FirefoxPage
  nextPage = 1;
  nextCommand = 1;
  requestListeners = new Set();

  constructor() {
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.requestTimeout = 0;
    this.server.headersTimeout = 0;
    this.server.keepAliveTimeout = 60_000;
  }

  handle(req, res) {
    const url = new URL(req.url, "http://driver.invalid");
    if (url.pathname.startsWith(AGENT_PATH)) return this.agentRequest(url, req, res);
    for (const listener of this.requestListeners) listener({ url: () => url.href });
    this.forward(url, req, res);
  }

  // The request as the browser made it, to its server; the answer back, with
  // the agent in HTML. A broken or stopped transfer on either side is passed on.
  forward(url, req, res) {
    const upstream = http.request(url, { method: req.method, headers: endToEnd(req.headers) });
    req.pipe(upstream);
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    // A server that sends more than its Content-Length makes Node's parser
    // fail after the answer ended; the browser has its whole answer by then.
    let answer = null;
    const broken = () => {
      if (answer?.complete) return;
      if (res.headersSent) res.destroy();
      else res.writeHead(502).end();
    };
    upstream.on("error", broken);
    upstream.on("response", (response) => {
      answer = response;
      const headers = endToEnd(answer.headers);
      answer.on("aborted", broken);
      answer.on("error", broken);
      if (!/^text\/html/.test(answer.headers["content-type"] ?? "") || req.method === "HEAD") {
        res.writeHead(answer.statusCode, headers);
        answer.pipe(res);
        return;
      }
      const chunks = [];
      answer.on("data", (c) => chunks.push(c));
      answer.on("end", () => {
        const body = Buffer.from(withAgent(Buffer.concat(chunks).toString("utf8")));
        delete headers["content-length"];
        res.writeHead(answer.statusCode, { ...headers, "content-length": body.length });
        res.end(body);
      });
    });
  }

  async agentRequest(url, req, res) {
    const json = (status, value) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
    const what = url.pathname.slice(AGENT_PATH.length);
    if (what === "home") {
      return res.writeHead(200, { "content-type": "text/html" }).end(withAgent("<!doctype html><title>driver</title>"));
    }
    if (what === "file") {
      const file = url.searchParams.get("path");
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": fs.statSync(file).size });
      return fs.createReadStream(file).pipe(res);
    }
    if (what === "next") {
      const page = this.pages.get(url.searchParams.get("page"));
      if (!page || page.doc !== url.searchParams.get("doc")) return json(410, null);
      return page.poll(res);
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (what === "hello") return json(200, { page: this.hello(body) });
    const page = this.pages.get(body.page);
    if (page && page.doc === body.doc) {
      if (what === "done") page.settle(body);
      else if (what === "event") page.emit(body.type, body);
    }
    json(200, {});
  }

  // Which page a new document belongs to: the one it says (reload,
  // same-origin navigation), else the one waiting to go to its URL.
  hello({ page: claimed, doc, url }) {
    let page = claimed ? this.pages.get(claimed) : null;
    if (!page) page = [...this.pages.values()].find((p) => p.expecting === url);
    if (!page) return null;
    page.arrive(doc);
    return page.id;
  }

  async launch(profile) {
    await new Promise((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    const port = this.server.address().port;
    const prefs = {
      "network.proxy.type": 1,
      "network.proxy.http": "127.0.0.1",
      "network.proxy.http_port": port,
      "network.proxy.no_proxies_on": "",
      "network.proxy.allow_hijacking_localhost": true,
      // The driver's page opens the test pages, each in its own window
      // (no background tab whose timers slow down), and closes them.
      "dom.disable_open_during_load": false,
      "dom.allow_scripts_to_close_windows": true,
      "browser.link.open_newwindow": 2,
      "browser.link.open_newwindow.restriction": 0,
      "browser.shell.checkDefaultBrowser": false,
      "browser.startup.homepage_override.mstone": "ignore",
      "browser.aboutwelcome.enabled": false,
      "browser.sessionstore.resume_from_crash": false,
      "browser.tabs.warnOnClose": false,
      "datareporting.policy.dataSubmissionEnabled": false,
      "toolkit.telemetry.reportingpolicy.firstRun": false,
      "app.update.disabledForTesting": true,
      "browser.safebrowsing.malware.enabled": false,
      "browser.safebrowsing.phishing.enabled": false,
      "network.captive-portal-service.enabled": false,
      "network.connectivity-service.enabled": false,
      "extensions.autoDisableScopes": 0,
      "extensions.update.enabled": false,
      // A closed page's process ends (the benchmark reads each page's peak memory from its own).
      "dom.ipc.keepProcessesAlive.web": 0,
    };
    fs.writeFileSync(
      path.join(profile, "user.js"),
      Object.entries(prefs).map(([k, v]) => `user_pref(${JSON.stringify(k)}, ${JSON.stringify(v)});\n`).join(""),
    );
    this.home = new FirefoxPage(this, "home");
    this.pages.set("home", this.home);
    // On a site of its own (localhost, the tests use 127.0.0.1), so that no
    // test page shares its process.
    const home = `http://localhost:${port}${AGENT_PATH}home`;
    this.home.expecting = home;
    const arrived = this.home.nextArrival();
    this.firefox = spawn(process.env.FIREFOX ?? "/usr/bin/firefox-esr", ["--headless", "--no-remote", "--profile", profile, home], {
      stdio: "ignore",
    });
    this.exited = new Promise((resolve) => this.firefox.once("exit", resolve));
    await Promise.race([
      arrived,
      this.exited.then(() => Promise.reject(new Error("Firefox exited before its first page loaded"))),
      timeout(60_000, "Firefox's first page did not load in 60 s"),
    ]);
  }

  newPage() {
    const page = new FirefoxPage(this, String(this.nextPage++));
    this.pages.set(page.id, page);
    return page.wrapper;
  }

  async close() {
    this.firefox.kill("SIGTERM");
    const killer = setTimeout(() => this.firefox.kill("SIGKILL"), 5_000);
    await this.exited;
    clearTimeout(killer);
    for (const page of this.pages.values()) page.fail(new Error("Firefox closed"));
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

const timeout = (ms, message) => new Promise((_, reject) => setTimeout(() => reject(new Error(message)), ms).unref());
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class FirefoxPage {
  doc = null; // the agent's document that takes commands
  expecting = null; // the URL a goto waits to see
  queue = [];
  pollers = [];
  pending = new Map(); // command id -> { resolve, reject }
  arrivals = [];
  listeners = { pageerror: [], request: [], console: [] };

  constructor(driver, id) {
    this.driver = driver;
    this.id = id;
    this.wrapper = this.adapt();
  }

  arrive(doc) {
    this.fail(new Error("the page navigated"));
    for (const res of this.pollers.splice(0)) res.writeHead(410).end();
    this.doc = doc;
    this.expecting = null;
    for (const resolve of this.arrivals.splice(0)) resolve();
  }

  nextArrival() {
    return new Promise((resolve) => this.arrivals.push(resolve));
  }

  poll(res) {
    if (this.queue.length) return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(this.queue.shift()));
    this.pollers.push(res);
    const timer = setTimeout(() => {
      const i = this.pollers.indexOf(res);
      if (i >= 0) this.pollers.splice(i, 1)[0].writeHead(204).end();
    }, POLL_MS);
    res.on("close", () => {
      clearTimeout(timer);
      const i = this.pollers.indexOf(res);
      if (i >= 0) this.pollers.splice(i, 1);
    });
  }

  /** Runs `f(arg)` in the page (as playwright's page.evaluate). */
  evaluate(f, arg) {
    if (!this.doc) return Promise.reject(new Error("the page has no document yet (goto first)"));
    const command = { id: this.driver.nextCommand++, fn: String(f), arg };
    return new Promise((resolve, reject) => {
      this.pending.set(command.id, { resolve, reject });
      const poller = this.pollers.shift();
      if (poller) poller.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(command));
      else this.queue.push(command);
    });
  }

  settle({ id, ok, value, error }) {
    const waiter = this.pending.get(id);
    if (!waiter) return;
    this.pending.delete(id);
    if (ok) waiter.resolve(value);
    else waiter.reject(new Error(error));
  }

  fail(error) {
    this.queue = [];
    for (const { reject } of this.pending.values()) reject(error);
    this.pending.clear();
  }

  emit(type, event) {
    if (type === "pageerror") for (const handler of this.listeners.pageerror) handler(new Error(event.message));
    if (type === "console") for (const handler of this.listeners.console) handler({ type: () => event.level, text: () => event.message });
  }

  async goto(url) {
    const target = new URL(url).href;
    this.expecting = target;
    const arrived = this.nextArrival();
    if (this.doc) {
      this.evaluate((u) => void setTimeout(() => (location.href = u), 0), target).catch(() => {});
    } else {
      await this.driver.home.evaluate((u) => void window.open(u, "_blank"), target);
    }
    await Promise.race([arrived, timeout(60_000, `${target} did not load in 60 s`)]);
  }

  async reload() {
    const arrived = this.nextArrival();
    this.evaluate(() => void setTimeout(() => location.reload(), 0)).catch(() => {});
    await Promise.race([arrived, timeout(60_000, "the page did not reload in 60 s")]);
  }

  async close() {
    if (this.doc) await this.evaluate(() => void setTimeout(() => window.close(), 0)).catch(() => {});
    this.fail(new Error("the page is closed"));
    for (const res of this.pollers.splice(0)) res.writeHead(410).end();
    this.doc = null;
    for (const listener of this.listeners.request) this.driver.requestListeners.delete(listener);
    this.driver.pages.delete(this.id);
  }

  async waitForFunction(f, arg, { timeout: ms = 30_000 } = {}) {
    const deadline = Date.now() + ms;
    for (;;) {
      let value;
      try {
        value = await this.evaluate(f, arg);
      } catch (e) {
        if (!/navigated/.test(e.message)) throw e;
      }
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`waitForFunction timed out after ${ms} ms: ${String(f).slice(0, 120)}`);
      await sleep(50);
    }
  }

  waitForSelector(selector, { timeout: ms = 30_000 } = {}) {
    return this.waitForFunction((s) => document.querySelector(s) !== null, selector, { timeout: ms });
  }

  // Playwright's element actions wait for their element first.
  async onElement(selector, f, arg) {
    await this.waitForSelector(selector);
    return this.evaluate(
      ({ selector, fn, arg }) => (0, eval)(`(${fn})`)(document.querySelector(selector), arg),
      { selector, fn: String(f), arg },
    );
  }

  adapt() {
    const wrapper = {
      goto: (url) => this.goto(url),
      reload: () => this.reload(),
      close: () => this.close(),
      screenshot: () => Promise.reject(new Error("no screenshots without a WebDriver")),
      evaluate: (f, arg) => this.evaluate(f, arg),
      waitForFunction: (f, arg, options) => this.waitForFunction(f, arg, options),
      waitForSelector: (selector, options) => this.waitForSelector(selector, options),
      textContent: (selector) => this.onElement(selector, (el) => el.textContent),
      inputValue: (selector) => this.onElement(selector, (el) => el.value),
      isVisible: (selector) => this.evaluate(visible, selector),
      isHidden: async (selector) => !(await this.evaluate(visible, selector)),
      // Playwright's fill: the value replaced at once, then one input event.
      fill: (selector, value) =>
        this.onElement(
          selector,
          (el, v) => {
            el.focus();
            el.value = v;
            el.dispatchEvent(new Event("input", { bubbles: true }));
            el.dispatchEvent(new Event("change", { bubbles: true }));
          },
          value,
        ),
      click: (selector) => this.onElement(selector, (el) => el.click()),
      check: (selector) => this.onElement(selector, (el) => el.checked || el.click()),
      selectOption: (selector, option) =>
        this.onElement(
          selector,
          (el, o) => {
            el.value = typeof o === "string" ? o : el.options[o.index].value;
            el.dispatchEvent(new Event("input", { bubbles: true }));
            el.dispatchEvent(new Event("change", { bubbles: true }));
          },
          option,
        ),
      // The files as the user picks them: fetched from the driver, set through a DataTransfer.
      setInputFiles: (selector, files) =>
        this.onElement(
          selector,
          async (el, { prefix, files }) => {
            const picked = new DataTransfer();
            for (const file of files) {
              const blob = await (await fetch(`${prefix}file?path=${encodeURIComponent(file)}`)).blob();
              picked.items.add(new File([blob], file.split("/").at(-1)));
            }
            el.files = picked.files;
            el.dispatchEvent(new Event("input", { bubbles: true }));
            el.dispatchEvent(new Event("change", { bubbles: true }));
          },
          { prefix: AGENT_PATH, files: files.map((f) => path.resolve(f)) },
        ),
      $eval: (selector, f, arg) => this.onElement(selector, f, arg),
      $$eval: (selector, f, arg) =>
        this.evaluate(
          ({ selector, fn, arg }) => (0, eval)(`(${fn})`)([...document.querySelectorAll(selector)], arg),
          { selector, fn: String(f), arg },
        ),
      locator: (selector) => ({ count: () => this.evaluate((s) => document.querySelectorAll(s).length, selector) }),
      on: (event, handler) => {
        if (event === "request") {
          this.listeners.request.push(handler);
          this.driver.requestListeners.add(handler);
        } else if (event === "pageerror" || event === "console") this.listeners[event].push(handler);
        else throw new Error(`the Firefox page has no '${event}' event`);
        return wrapper;
      },
    };
    return wrapper;
  }
}

/** A fresh Firefox profile as a playwright-like BrowserContext ({ newPage, close }). */
export async function launchFirefoxContext(profile) {
  const driver = new Driver();
  await driver.launch(profile);
  return {
    newPage: async () => driver.newPage(),
    close: () => driver.close(),
  };
}
