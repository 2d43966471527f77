// The dashboard in real headless Chromium, against the real weir binary.
//
// Starts two fake upstreams and `weir run -c CONFIG --admin 127.0.0.1:APORT` with
// one pool of both (tcp health checks every 300ms, fall = 2), opens the
// dashboard, and checks that:
//   - the page loads and renders the stats, without console errors;
//   - the listener, the pool and both endpoints are listed;
//   - the Certificates panel lists the TLS listener's two certificates (made with
//     `weir cert`) with their names and days left, the 5-day one highlighted as
//     expiring soon and the 90-day one not (a picture of the panel goes to
//     target/browser-artifacts/certificates.png);
//   - after ~50 requests through the listener the pool's req/s graph has points;
//   - three gRPC calls (h2c, from Node) to a route whose backend is not there are answered
//     UNAVAILABLE, and the route's and the listener's rows show them, highlighted;
//   - with half the traffic answered 503 no_healthy_endpoint by weir (a route to a pool
//     whose only endpoint is down, fail_closed) and some 500s from the backend, the
//     overview's errors/s, the failing pool's card, its errors/s graph, the listener's and
//     the route's rows show the errors with their reasons and the answers by status class;
//   - p50 and p99 are interpolated within their histogram bucket, not its bounds;
//   - a page opened later draws the past minutes at once (weir keeps them);
//   - after one upstream is killed its endpoint shows data-state="down" within 3 s;
//   - a page of another origin cannot register an endpoint with a text/plain POST;
//   - after a reload without the TLS listener the Certificates panel is hidden;
//   - a screenshot is saved to target/browser-artifacts/dashboard.png;
//   - a replica of a real etcd (/usr/bin/etcd) lists a route written into its prefix by
//     hand that does not validate, with why, in a banner of its own (held back); the
//     file-mode dashboard shows none (a picture goes to target/browser-artifacts/held.png).
// Logs of every process go beside the screenshot. Ends with `N passed, N failed`
// and exits 1 if anything failed.
//
// Run it with tests/browser/run.sh (installs Chromium, npm ci, cargo build).
// Environment:
//   WEIR_BIN            weir binary            [target/debug/weir]
//   FAKE_UPSTREAM_BIN   fake-upstream binary   [target/debug/fake-upstream]
//   CHROMIUM            browser                [/usr/bin/chromium]
//   ARTIFACTS_DIR       screenshot and logs    [target/browser-artifacts]

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const WEIR_BIN = process.env.WEIR_BIN || path.join(ROOT, "target", "debug", "weir");
const FAKE_UPSTREAM_BIN = process.env.FAKE_UPSTREAM_BIN || path.join(ROOT, "target", "debug", "fake-upstream");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const ARTIFACTS = process.env.ARTIFACTS_DIR || path.join(ROOT, "target", "browser-artifacts");
const SCREENSHOT = path.join(ARTIFACTS, "dashboard.png");
const CERTS_SCREENSHOT = path.join(ARTIFACTS, "certificates.png");
const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const OVERALL_TIMEOUT_MS = 180_000;
const DOWN_WITHIN_MS = 3000;
const REQUESTS = 50;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const procs = [];
const consoleLog = [];
const pageErrors = [];
let tmp = null;
let context = null;
let page = null;

// ---------- processes ----------

function start(name, cmd, args) {
  if (!existsSync(cmd)) {
    throw new Error(`${cmd} not found: build it with \`cargo build -p weir -p weir-testkit --features weir/etcd\` (tests/browser/run.sh does)`);
  }
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  const p = { name, child, out: "", exit: null, listeners: [] };
  const onData = (d) => {
    p.out += d.toString();
    if (p.out.length > 1_000_000) p.out = p.out.slice(-500_000);
    for (const f of p.listeners) f();
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  child.on("exit", (code, signal) => {
    p.exit = { code, signal };
    for (const f of p.listeners) f();
  });
  child.on("error", (e) => {
    p.out += `\n[spawn error: ${e.message}]\n`;
    p.exit = { code: null, signal: null, error: e };
    for (const f of p.listeners) f();
  });
  procs.push(p);
  return p;
}

function tail(p, lines = 15) {
  const t = p.out.trimEnd().split("\n").slice(-lines).join("\n    ");
  return t ? `\n    ${t}` : " (no output)";
}

function exitText(p) {
  if (p.exit.error) return `could not start: ${p.exit.error.message}`;
  return p.exit.signal ? `was killed by ${p.exit.signal}` : `exited with code ${p.exit.code}`;
}

function waitForOutput(p, re, ms) {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (re.test(p.out)) return done(resolve);
      if (p.exit) return done(reject, new Error(`${p.name} ${exitText(p)} before printing ${re}:${tail(p)}`));
    };
    const timer = setTimeout(() => done(reject, new Error(`${p.name} did not print ${re} within ${ms} ms:${tail(p)}`)), ms);
    function done(f, v) {
      clearTimeout(timer);
      p.listeners = p.listeners.filter((l) => l !== check);
      f(v);
    }
    p.listeners.push(check);
    check();
  });
}

async function stopAll() {
  for (const p of procs) if (!p.exit) p.child.kill("SIGTERM");
  const deadline = Date.now() + 5000;
  while (procs.some((p) => !p.exit) && Date.now() < deadline) await sleep(50);
  for (const p of procs) if (!p.exit) p.child.kill("SIGKILL");
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function freePorts(n) {
  const ports = new Set();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

// ---------- HTTP ----------

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

function get(url, timeoutMs = 2000) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on("timeout", () => req.destroy(new Error(`timed out after ${timeoutMs} ms`)));
    req.on("error", reject);
  });
}

async function waitReady(weir, adminUrl, ms) {
  const deadline = Date.now() + ms;
  let last = "no answer";
  while (Date.now() < deadline) {
    if (weir.exit) {
      throw new Error(
        `weir ${exitText(weir)} before its admin server answered /readyz ` +
          `(this build needs \`weir run --admin ADDR\` and the admin server with its dashboard):${tail(weir)}`,
      );
    }
    try {
      const r = await get(`${adminUrl}/readyz`, 1000);
      if (r.status === 200) return;
      last = `HTTP ${r.status} ${r.body.trim().slice(0, 200)}`;
    } catch (e) {
      last = e.message;
    }
    await sleep(100);
  }
  throw new Error(`the admin server at ${adminUrl}/readyz was not ready within ${ms} ms (last: ${last}):${tail(weir)}`);
}

// ---------- page helpers ----------

/** Polls fn() in the test until it returns a truthy value; throws with describe() after ms. */
async function eventually(fn, ms, describe) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() >= deadline) throw new Error(await describe());
    await sleep(100);
  }
}

function endpointRow(pool, addr) {
  return `section.pool[data-pool="${pool}"] tr[data-endpoint="${addr}"]`;
}

async function attr(selector, name) {
  const el = await page.$(selector);
  return el ? el.getAttribute(name) : null;
}

async function pageSummary() {
  return page.evaluate(() => {
    const q = (s) => [...document.querySelectorAll(s)];
    return JSON.stringify({
      ready: document.body.dataset.ready,
      updates: document.body.dataset.updates,
      conn: document.getElementById("conn")?.textContent?.trim(),
      pools: q("section.pool").map((p) => p.dataset.pool),
      endpoints: q("tr[data-endpoint]").map((r) => `${r.dataset.endpoint}=${r.dataset.state}`),
      charts: q("figure.chart").map((c) => `${c.closest("[data-pool]")?.dataset.pool}/${c.dataset.chart}: points=${c.dataset.points} nonzero=${c.dataset.nonzero}`),
    });
  });
}

// ---------- the test ----------

const results = [];

async function check(name, fn) {
  const t0 = Date.now();
  try {
    const note = await fn();
    results.push({ name, ok: true });
    console.log(`ok   - ${name}${note ? ` (${note})` : ""} [${Date.now() - t0} ms]`);
    return true;
  } catch (e) {
    results.push({ name, ok: false });
    console.log(`FAIL - ${name}: ${e && e.message ? e.message : e}`);
    return false;
  }
}

function skip(names, why) {
  for (const name of names) {
    results.push({ name, ok: false });
    console.log(`FAIL - ${name}: not run (${why})`);
  }
}

async function main() {
  mkdirSync(ARTIFACTS, { recursive: true });
  rmSync(SCREENSHOT, { force: true });
  rmSync(CERTS_SCREENSHOT, { force: true });
  tmp = mkdtempSync(path.join(os.tmpdir(), "weir-browser-"));
  const [listenPort, adminPort, portA, portB, tlsPort, replicaAdminPort, noEtcdPort, deadPort, failPort, deadDnsPort] = await freePorts(10);
  const listenUrl = `http://127.0.0.1:${listenPort}`;
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const addrA = `127.0.0.1:${portA}`;
  const addrB = `127.0.0.1:${portB}`;
  let upA, upB, weir, config, configText;

  const later = [
    "Chromium starts",
    "dashboard loads and shows the stats",
    "lists the listener, the pool and both endpoints",
    "the Certificates panel shows names and days left, the 5-day one as a warning",
    `req/s graph has data points after ${REQUESTS} requests`,
    "gRPC calls show in the listener's and the route's rows, with the statuses that failed",
    "a failing pool: weir's own 503s and upstream 500s show as errors with their reasons, by status class",
    "p50 and p99 are interpolated within their bucket, not its bounds",
    "a page opened later draws the past minutes at once",
    "a killed upstream shows data-state=\"down\" within 3 s",
    "a page of another origin cannot change the config",
    "after a reload without the TLS listener the Certificates panel is hidden",
    "a replica whose etcd is away says so on its dashboard; this one (a file) does not",
    "no console errors",
    "screenshot saved",
    "a replica lists a stored resource that does not validate, with why; this one (a file) does not",
    "a pool's DNS name that does not resolve is shown in red, with why, no endpoint from it, and when it is asked next",
  ];

  const started = await check("weir starts with its admin server", async () => {
    upA = start("upstream-a", FAKE_UPSTREAM_BIN, ["--listen", addrA, "--name", "a", "--threads", "1"]);
    upB = start("upstream-b", FAKE_UPSTREAM_BIN, ["--listen", addrB, "--name", "b", "--threads", "1"]);
    await Promise.all([waitForOutput(upA, /listening on/, 10_000), waitForOutput(upB, /listening on/, 10_000)]);
    // Two self-signed pairs from `weir cert`: one expiring in 5 days (to be flagged),
    // one in 90 (not).
    const certs = path.join(tmp, "certs");
    for (const [names, days] of [[["soon.test", "www.soon.test"], 5], [["later.test"], 90]]) {
      const r = spawnSync(WEIR_BIN, ["cert", ...names, "--out", certs, "--days", String(days)], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`weir cert ${names.join(" ")} failed (${r.status}): ${r.stderr || r.error}`);
    }
    const secure = `[listeners.secure]
bind = "127.0.0.1:${tlsPort}"
pool = "app"

[listeners.secure.tls]
certificates = [
  { cert = "${certs}/soon.test.pem", key = "${certs}/soon.test.key", default = true },
  { cert = "${certs}/later.test.pem", key = "${certs}/later.test.key" },
]
`;
    config = path.join(tmp, "weir.toml");
    configText = (withTls) => `# written by tests/browser/dashboard.test.mjs
[global]
drain_grace = "1s"
# No DNS server listens here: the pool "named" follows a name that never resolves.
resolvers = ["127.0.0.1:${deadDnsPort}"]

[listeners.web]
bind = "127.0.0.1:${listenPort}"
pool = "app"

${withTls ? secure : ""}
[pools.app]
max_conn = 4
max_queue = 100
endpoints = [
  { addr = "${addrA}" },
  { addr = "${addrB}" },
]

[pools.app.health]
check = "tcp"
interval = "300ms"
timeout = "200ms"
fall = 2

# gRPC calls to a backend that is not there: weir answers them UNAVAILABLE.
[routes.grpc]
listener = "web"
path_prefix = "/weir.test.Echo/"
pool = "grpc"

[pools.grpc]
endpoints = [{ addr = "127.0.0.1:${deadPort}" }]

[pools.grpc.retry]
attempts = 0

# Half the traffic: a pool whose only endpoint is down, so weir answers 503 itself.
[routes.failing]
listener = "web"
path_prefix = "/failing/"
pool = "failing"

[pools.failing]
endpoints = [{ addr = "127.0.0.1:${failPort}" }]

[pools.failing.health]
check = "tcp"
interval = "300ms"
timeout = "200ms"
fall = 1
no_healthy = "fail_closed"

# A pool by DNS name, whose resolver does not answer.
[routes.named]
listener = "web"
path_prefix = "/named/"
pool = "named"

[pools.named]
endpoints = [{ addr = "api.weir.test:8080" }]
`;
    writeFileSync(config, configText(true));
    weir = start("weir", WEIR_BIN, ["run", "-c", config, "--admin", `127.0.0.1:${adminPort}`, "--threads", "2"]);
    await waitReady(weir, adminUrl, 20_000);
    return `admin on ${adminUrl}, listener on ${listenUrl}`;
  });
  if (!started) return skip(later, "weir did not start");

  const browserOk = await check(later[0], async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: apt-get install -y chromium (tests/browser/run.sh does)`);
    context = await chromium.launchPersistentContext(path.join(tmp, "profile"), {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_FLAGS,
      viewport: { width: 1440, height: 900 },
      timeout: 30_000,
    });
    page = context.pages()[0] || (await context.newPage());
    page.on("console", (m) => {
      consoleLog.push(`[${m.type()}] ${m.text()}`);
      if (m.type() === "error") pageErrors.push(`console error: ${m.text()}`);
    });
    page.on("pageerror", (e) => pageErrors.push(`uncaught exception: ${e.message}`));
    page.on("requestfailed", (r) => pageErrors.push(`request failed: ${r.url()} (${r.failure()?.errorText})`));
    page.on("response", (r) => {
      if (r.status() >= 400) pageErrors.push(`HTTP ${r.status()} for ${r.url()}`);
    });
    return context.browser()?.version() ?? "";
  });
  if (!browserOk) return skip(later.slice(1), "no browser");

  const loaded = await check(later[1], async () => {
    const res = await page.goto(`${adminUrl}/`, { waitUntil: "load", timeout: 15_000 });
    if (!res || res.status() !== 200) throw new Error(`GET / answered ${res ? res.status() : "nothing"}`);
    const title = await page.title();
    if (!/weir/i.test(title)) throw new Error(`page title is "${title}", not the weir dashboard`);
    await eventually(
      () => attr("body", "data-ready").then((v) => v === "true"),
      5000,
      async () => `no stats rendered within 5 s: ${await pageSummary()}`,
    );
    const version = (await page.textContent("#version"))?.trim();
    const uptime = (await page.textContent("#uptime"))?.trim();
    if (!version || version === "–") throw new Error("the header shows no version");
    if (!uptime || uptime === "–") throw new Error("the header shows no uptime");
    return `config ${version}, uptime ${uptime}`;
  });
  if (!loaded) {
    skip(later.slice(2, 10), "the page did not load");
  } else {
    await check(later[2], async () => {
      if (!(await page.$('#listeners tr[data-listener="web"]'))) throw new Error(`listener "web" is not in the listeners table`);
      if (!(await page.$('section.pool[data-pool="app"]'))) throw new Error(`no card for pool "app": ${await pageSummary()}`);
      await eventually(
        async () => (await attr(endpointRow("app", addrA), "data-state")) === "active" && (await attr(endpointRow("app", addrB), "data-state")) === "active",
        5000,
        async () => `endpoints ${addrA} and ${addrB} are not both listed as active: ${await pageSummary()}`,
      );
      return `${addrA} and ${addrB} active`;
    });

    await check(later[3], async () => {
      if (await page.$("#certs-panel[hidden]")) throw new Error("the Certificates panel is hidden");
      const rows = await page.$$eval("#certs tbody tr[data-cert]", (trs) =>
        trs.map((tr) => ({
          listener: tr.dataset.certListener,
          names: tr.dataset.names,
          days: Number(tr.dataset.daysLeft),
          expiry: tr.dataset.expiry,
          cls: tr.className,
          text: tr.innerText.replace(/\s+/g, " ").trim(),
        })),
      );
      const find = (n) => rows.find((r) => r.names.split(",").includes(n));
      const soon = find("soon.test");
      const later_ = find("later.test");
      if (!soon || !later_) throw new Error(`both certificates are not listed: ${JSON.stringify(rows)}`);
      if (soon.listener !== "secure" || later_.listener !== "secure") throw new Error(`not listed under listener "secure": ${JSON.stringify(rows)}`);
      if (!soon.text.includes("soon.test, www.soon.test")) throw new Error(`the 5-day row does not show its names: "${soon.text}"`);
      if (!(soon.days > 4.9 && soon.days <= 5.01)) throw new Error(`the 5-day certificate has data-days-left=${soon.days}`);
      if (!/\b5\.0 days\b|\b4\.9 days\b/.test(soon.text)) throw new Error(`the 5-day row does not show its days left: "${soon.text}"`);
      if (!/\b\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\b/.test(soon.text)) throw new Error(`the 5-day row shows no expiry date: "${soon.text}"`);
      if (!soon.text.includes("yes")) throw new Error(`the default certificate is not shown as default: "${soon.text}"`);
      if (soon.expiry !== "warning" || !soon.cls.split(" ").includes("cert-warning")) {
        throw new Error(`the 5-day certificate is not highlighted: data-expiry=${soon.expiry} class="${soon.cls}"`);
      }
      if (!(later_.days > 89 && later_.days <= 90.01)) throw new Error(`the 90-day certificate has data-days-left=${later_.days}`);
      if (!later_.text.includes("89 days") && !later_.text.includes("90 days")) throw new Error(`the 90-day row does not show its days left: "${later_.text}"`);
      if (later_.expiry !== "ok" || later_.cls.includes("cert-")) throw new Error(`the 90-day certificate is highlighted: data-expiry=${later_.expiry} class="${later_.cls}"`);
      await page.locator("#certs-panel").screenshot({ path: CERTS_SCREENSHOT });
      return `${soon.names}: ${soon.days} days (${soon.expiry}); ${later_.names}: ${later_.days} days`;
    });

    await check(later[4], async () => {
      // Spread over ~2.5 s so that any rate window the server uses sees them.
      const statuses = await Promise.all(
        Array.from({ length: REQUESTS }, (_, i) =>
          sleep(i * 50).then(() => get(`${listenUrl}/`, 5000).then((r) => r.status, (e) => `error: ${e.message}`)),
        ),
      );
      const bad = statuses.filter((s) => s !== 200);
      if (bad.length) throw new Error(`${bad.length} of ${REQUESTS} requests through the listener failed: ${[...new Set(bad)].join(", ")}`);
      const chart = 'section.pool[data-pool="app"] figure.chart[data-chart="rps"]';
      await eventually(
        async () => Number(await attr(chart, "data-points")) >= 2 && Number(await attr(chart, "data-nonzero")) >= 1,
        5000,
        async () => `the req/s graph has no non-zero points 5 s after the traffic: ${await pageSummary()}`,
      );
      // The page shows the stats of its last poll: give it a poll or two to catch up.
      let rows = [];
      await eventually(
        async () => {
          rows = await page.$$eval('section.pool[data-pool="app"] tr[data-endpoint]', (trs) => trs.map((tr) => Number(tr.dataset.requests) || 0));
          return rows.reduce((a, b) => a + b, 0) >= REQUESTS;
        },
        3000,
        async () => `the endpoints' request counts (${rows.join(" + ")}) do not add up to at least ${REQUESTS}`,
      );
      return `points=${await attr(chart, "data-points")} nonzero=${await attr(chart, "data-nonzero")}, endpoint requests ${rows.join("+")}`;
    });

    await check(later[5], async () => {
      // Three unary calls over h2c (prior knowledge, as gRPC clients without TLS speak).
      const statuses = [];
      const client = http2.connect(listenUrl);
      client.on("error", () => {});
      try {
        for (let i = 0; i < 3; i++) {
          statuses.push(
            await new Promise((resolve, reject) => {
              const req = client.request({
                ":method": "POST",
                ":path": "/weir.test.Echo/Unary",
                "content-type": "application/grpc",
                te: "trailers",
              });
              let status = null;
              req.on("response", (hd) => (status = hd["grpc-status"] ?? status));
              req.on("trailers", (t) => (status = t["grpc-status"] ?? status));
              req.on("end", () => resolve(status));
              req.on("error", reject);
              req.setTimeout(5000, () => reject(new Error("no answer within 5 s")));
              req.resume();
              req.end(Buffer.from([0, 0, 0, 0, 0]));
            }),
          );
        }
      } finally {
        client.close();
      }
      if (!statuses.every((st) => st === "14")) throw new Error(`grpc-status ${statuses.join(", ")}, not 14 (UNAVAILABLE) each`);
      const route = 'tr[data-route="grpc"] td[data-grpc-calls]';
      const listener = 'tr[data-listener="web"] td[data-grpc-calls]';
      await eventually(
        async () =>
          Number(await attr(route, "data-grpc-calls")) === 3 &&
          Number(await attr(route, "data-grpc-failed")) === 3 &&
          Number(await attr(listener, "data-grpc-calls")) === 3,
        5000,
        async () =>
          `the rows show route ${await attr(route, "data-grpc-calls")}/${await attr(route, "data-grpc-failed")}, listener ${await attr(listener, "data-grpc-calls")} gRPC calls, not 3: ${await pageSummary()}`,
      );
      const text = (await page.textContent(route))?.trim() ?? "";
      if (!text.includes("UNAVAILABLE 3")) throw new Error(`the route's cell says "${text}", not UNAVAILABLE 3`);
      const cls = await attr(route, "class");
      if (!(cls ?? "").split(" ").includes("grpc-failing")) throw new Error(`the failing calls are not highlighted: class="${cls}"`);
      const app = await attr('tr[data-listener="web"] td[data-grpc-calls]', "data-grpc-failed");
      return `route cell "${text}", listener failed=${app}`;
    });

    await check(later[6], async () => {
      // Half the requests to the failing pool (503 from weir), a quarter answered 500 by the
      // backend, a quarter 200, about 40 a second until the page shows them.
      const seen = { 200: 0, 500: 0, 503: 0, other: 0 };
      let stop = false;
      const traffic = (async () => {
        for (let i = 0; !stop; i++) {
          const p = ["/failing/a", "/status/500", "/failing/b", "/"][i % 4];
          const r = await get(`${listenUrl}${p}`, 5000).then((x) => x.status, () => "error");
          seen[r in seen ? r : "other"]++;
          await sleep(25);
        }
      })();
      try {
        const pool = (name) => `section.pool[data-pool="${name}"]`;
        const failing = {
          overview: async () => Number(await attr("#sum-eps", "data-value")) > 0,
          eps: async () => Number(await attr(`${pool("failing")} [data-stat="eps"]`, "data-value")) > 0,
          reason: async () => !!(await page.$(`${pool("failing")} [data-stat="errors"] [data-reason="no_healthy_endpoint"]`)),
          upstream: async () => !!(await page.$(`${pool("app")} [data-stat="errors"] [data-reason="upstream_5xx"]`)),
          classes: async () => Number(await attr(`${pool("failing")} [data-stat="statuses"]`, "data-5xx")) > 0,
          graph: async () => Number(await attr(`${pool("failing")} figure.chart[data-chart="eps"]`, "data-nonzero")) >= 1,
          listener: async () =>
            Number(await attr('tr[data-listener="web"] td[data-errors]', "data-errors")) > 0 &&
            !!(await page.$('tr[data-listener="web"] td[data-errors] [data-reason="no_healthy_endpoint"]')) &&
            !!(await page.$('tr[data-listener="web"] td[data-errors] [data-reason="upstream_5xx"]')) &&
            Number(await attr('tr[data-listener="web"] td[data-eps]', "data-eps")) > 0 &&
            Number(await attr('tr[data-listener="web"] td.statuses', "data-5xx")) > 0 &&
            Number(await attr('tr[data-listener="web"] td.statuses', "data-2xx")) > 0,
          route: async () => !!(await page.$('tr[data-route="failing"] td[data-errors] [data-reason="no_healthy_endpoint"]')),
        };
        const missing = async () => {
          const out = [];
          for (const [k, f] of Object.entries(failing)) if (!(await f())) out.push(k);
          return out;
        };
        await eventually(
          async () => (await missing()).length === 0,
          15_000,
          async () => `not shown 15 s into the traffic (${JSON.stringify(seen)}): ${(await missing()).join(", ")}: ${await pageSummary()}`,
        );
        if (!(seen[503] > 0 && seen[500] > 0 && seen[200] > 0)) throw new Error(`the traffic was not as meant: ${JSON.stringify(seen)}`);
        const eps = await page.textContent("#sum-eps");
        const cls = await attr("#sum-eps", "class");
        if (!(cls ?? "").split(" ").includes("bad")) throw new Error(`errors/s ${eps} is not highlighted: class="${cls}"`);
        const chips = await page.$$eval(`${pool("failing")} [data-stat="errors"] [data-reason]`, (els) => els.map((e) => e.textContent.trim()));
        return `answers ${JSON.stringify(seen)}; overview errors/s ${eps}; failing pool errors: ${chips.join(", ")}`;
      } finally {
        stop = true;
        await traffic;
      }
    });

    await check(later[7], async () => {
      // Bucket bounds in ms: what a percentile read as its bucket's bound would be.
      const bounds = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000];
      const stat = (k) => attr(`section.pool[data-pool="app"] [data-stat="${k}"]`, "data-value");
      let last = [];
      await eventually(
        async () => {
          last = [Number(await stat("p50")), Number(await stat("p99"))];
          return last.every((v) => v > 0 && !bounds.some((b) => Math.abs(b - v) < 1e-9));
        },
        10_000,
        async () => `pool app shows p50 ${last[0]} ms and p99 ${last[1]} ms: bucket bounds, or none`,
      );
      return `p50 ${last[0].toFixed(3)} ms, p99 ${last[1].toFixed(3)} ms`;
    });

    await check(later[8], async () => {
      const other = await context.newPage();
      const errors = [];
      other.on("pageerror", (e) => errors.push(e.message));
      try {
        // What weir keeps now: every sample since it started (less than five minutes ago).
        const kept = JSON.parse((await get(`${adminUrl}/api/v1/stats/history`)).body).t.length;
        if (!(kept >= 3)) throw new Error(`weir keeps only ${kept} samples`);
        await other.goto(`${adminUrl}/`, { waitUntil: "load", timeout: 15_000 });
        await other.waitForSelector('body[data-ready="true"]', { timeout: 10_000 });
        const chart = 'section.pool[data-pool="failing"] figure.chart[data-chart="eps"]';
        const [updates, points, nonzero, span] = await other.evaluate((sel) => {
          const c = document.querySelector(sel);
          return [Number(document.body.dataset.updates), Number(c?.dataset.points), Number(c?.dataset.nonzero), Number(c?.dataset.span)];
        }, chart);
        if (errors.length) throw new Error(`the page threw: ${errors.join("; ")}`);
        // Drawn at once: every sample weir kept, the failing seconds among them.
        if (!(points >= kept && points > updates)) {
          throw new Error(`the errors/s graph has ${points} points after ${updates} update(s) of the page; weir kept ${kept}`);
        }
        if (!(nonzero >= 1)) throw new Error(`the errors/s graph shows no errors of the past minutes (${points} points)`);
        return `after ${updates} update(s): ${points} points (weir kept ${kept}), ${nonzero} with errors, span ${span} s`;
      } finally {
        await other.close();
      }
    });

    await check(later[9], async () => {
      upB.child.kill("SIGKILL");
      const t0 = Date.now();
      await eventually(
        async () => (await attr(endpointRow("app", addrB), "data-state")) === "down",
        DOWN_WITHIN_MS,
        async () => `${addrB} not shown as down ${DOWN_WITHIN_MS} ms after its upstream was killed: ${await pageSummary()}`,
      );
      const took = Date.now() - t0;
      const other = await attr(endpointRow("app", addrA), "data-state");
      if (other !== "active") throw new Error(`${addrA} (still running) shows "${other}", not "active"`);
      // Let one more poll land so the screenshot shows the graphs with a few more points.
      await sleep(1200);
      return `down after ${took} ms; healthy=${await attr(endpointRow("app", addrB), "data-healthy")}`;
    });
  }

  // The admin listener is safe from web pages: a page elsewhere (here the proxied listener, another port so another
  // origin) sends what needs no CORS preflight: a text/plain POST. Chromium adds Origin,
  // weir refuses it (403) and registers nothing.
  await check(later[10], async () => {
    const other = await context.newPage();
    try {
      await other.goto(`${listenUrl}/`, { waitUntil: "load", timeout: 10_000 });
      const url = `${adminUrl}/api/v1/transaction`;
      const answered = other.waitForResponse((r) => r.url() === url, { timeout: 10_000 });
      const body = JSON.stringify({
        changes: [{ op: "put", path: "pools/app/endpoints/127.0.0.1:9", if_none_match: "*", spec: { weight: 1 } }],
      });
      await other.evaluate(
        ([u, b]) => fetch(u, { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: b }).catch(() => {}),
        [url, body],
      );
      const status = (await answered).status();
      if (status !== 403) throw new Error(`the cross-origin POST was answered ${status}, not 403`);
      const eps = await get(`${adminUrl}/api/v1/pools/app/endpoints`);
      if (eps.body.includes("127.0.0.1:9\"")) throw new Error(`the endpoint was registered: ${eps.body}`);
      return `answered ${status}; endpoints unchanged`;
    } finally {
      await other.close();
    }
  });

  await check(later[11], async () => {
    if (!loaded) throw new Error("not run: the page did not load");
    writeFileSync(config + ".tmp", configText(false));
    renameSync(config + ".tmp", config);
    weir.child.kill("SIGHUP");
    await eventually(
      async () => !(await page.$('#listeners tr[data-listener="secure"]')) && !!(await page.$("#certs-panel[hidden]")),
      10_000,
      async () => `listener "secure" still listed or the Certificates panel still shown 10 s after the reload: ${await pageSummary()}`,
    );
  });

  // Replicas sharing their config through etcd: a replica started from its cache while its etcd does not answer (nothing
  // listens on that port) serves its last config and shows why changes are refused.
  await check(later[12], async () => {
    const cache = path.join(tmp, "store-cache.json");
    writeFileSync(cache, JSON.stringify({ prefix: "/weir", revision: 1, resources: [] }));
    const replica = start("replica", WEIR_BIN, [
      "run", "--store", `etcd://127.0.0.1:${noEtcdPort}/weir`, "--store-cache", cache,
      "--admin", `127.0.0.1:${replicaAdminPort}`, "--threads", "1",
    ]);
    await waitReady(replica, `http://127.0.0.1:${replicaAdminPort}`, 20_000);
    const other = await context.newPage();
    try {
      await other.goto(`http://127.0.0.1:${replicaAdminPort}/`, { waitUntil: "load", timeout: 10_000 });
      await other.waitForSelector('#store[data-state="unreachable"]:not([hidden])', { timeout: 10_000 });
      const text = await other.textContent("#store");
      if (!text.includes(`etcd://127.0.0.1:${noEtcdPort}/weir`) || !text.includes("changes are refused")) {
        throw new Error(`the store banner says "${text}"`);
      }
      const mode = await other.textContent("#source");
      if (mode !== "etcd") throw new Error(`the replica's dashboard says its config is from "${mode}"`);
    } finally {
      await other.close();
    }
    if (!(await page.$("#store[hidden]"))) throw new Error("the file-mode dashboard shows a store banner");
    const mine = await page.textContent("#source");
    if (mine !== "file") throw new Error(`the file-mode dashboard says its config is from "${mine}"`);
    return "banner shown on the replica, none on the file-mode weir";
  });

  await check(later[13], async () => {
    if (pageErrors.length) throw new Error(`${pageErrors.length}:\n    ${pageErrors.join("\n    ")}`);
  });

  await check(later[14], async () => {
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    const size = statSync(SCREENSHOT).size;
    if (size < 1000) throw new Error(`${SCREENSHOT} is only ${size} bytes`);
    return `${path.relative(process.cwd(), SCREENSHOT) || SCREENSHOT}, ${size} bytes`;
  });

  // A resource written into etcd's prefix by someone else that does not validate: the
  // replica holds it back, runs the rest, and its dashboard lists it with why.
  await check(later[15], async () => {
    const [clientPort, peerPort, heldAdminPort] = await freePorts(3);
    const etcdUrl = `http://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const etcd = start("etcd", "/usr/bin/etcd", [
      "--name", "m0", "--data-dir", path.join(tmp, "etcd"),
      "--listen-client-urls", etcdUrl, "--advertise-client-urls", etcdUrl,
      "--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl,
      "--initial-cluster", `m0=${peerUrl}`, "--initial-cluster-token", `weir-browser-${process.pid}`,
      "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
    ]);
    await eventually(
      async () => {
        if (etcd.exit) throw new Error(`etcd ${exitText(etcd)}:${tail(etcd)}`);
        const r = await get(`${etcdUrl}/health`, 1000).catch(() => null);
        return r && r.status === 200 && r.body.includes('"health":"true"');
      },
      30_000,
      async () => `etcd not healthy within 30 s:${tail(etcd)}`,
    );
    const heldAdmin = `http://127.0.0.1:${heldAdminPort}`;
    const replica = start("replica-held", WEIR_BIN, [
      "run", "--store", `etcd://127.0.0.1:${clientPort}/weir`, "--store-cache", path.join(tmp, "held-cache.json"),
      "--admin", `127.0.0.1:${heldAdminPort}`, "--threads", "1",
    ]);
    await waitReady(replica, heldAdmin, 20_000);
    const ghost = JSON.stringify({ listener: "web", path_prefix: "/ghost", pool: "missing" });
    const put = spawnSync("/usr/bin/etcdctl", ["--endpoints", etcdUrl, "put", "--", "/weir/route/ghost", ghost], {
      encoding: "utf8",
      env: { ...process.env, ETCDCTL_API: "3" },
    });
    if (put.status !== 0) throw new Error(`etcdctl put failed (${put.status}): ${put.stderr || put.error}`);
    const held = await context.newPage();
    const errors = [];
    held.on("console", (m) => m.type() === "error" && errors.push(`console error: ${m.text()}`));
    held.on("pageerror", (e) => errors.push(`uncaught exception: ${e.message}`));
    try {
      await held.goto(`${heldAdmin}/`, { waitUntil: "load", timeout: 10_000 });
      const item = '#invalid:not([hidden]) li[data-path="routes/ghost"]';
      await held.waitForSelector(item, { timeout: 10_000 });
      const text = (await held.textContent("#invalid")) ?? "";
      for (const want of ["1 stored resource does not validate", "held back", "routes/ghost/pool", "missing", "not running"]) {
        if (!text.includes(want)) throw new Error(`the banner does not say "${want}": "${text}"`);
      }
      await held.locator("#invalid").screenshot({ path: path.join(ARTIFACTS, "held.png") });
      if (errors.length) throw new Error(errors.join("; "));
    } finally {
      await held.close();
    }
    if (await page.$("#invalid:not([hidden])")) throw new Error("the file-mode dashboard lists resources held back");
    return "listed on the replica with why, none on the file-mode weir";
  });

  await check(later[16], async () => {
    const line = 'section.pool[data-pool="named"] .dns-name[data-name="api.weir.test:8080"]';
    await eventually(
      async () => (await attr(line, "data-result")) !== null && (await attr(line, "data-result")) !== "ok",
      30_000,
      async () => `no failed DNS name on the "named" pool's card within 30 s: ${await pageSummary()}`,
    );
    const cls = (await attr(line, "class")) ?? "";
    if (!cls.split(" ").includes("bad")) throw new Error(`the failing name is not marked bad: class "${cls}"`);
    const text = (await page.textContent(line)) ?? "";
    for (const want of ["api.weir.test:8080", "no endpoint from it yet"]) {
      if (!text.includes(want)) throw new Error(`the name's line does not say "${want}": "${text}"`);
    }
    const color = await page.$eval(line, (e) => getComputedStyle(e).color);
    const muted = await page.$eval("body", (e) => getComputedStyle(e).color);
    if (color === muted) throw new Error(`the failing name is drawn in the page's plain colour ${color}`);
    if (!/next query in \d|being asked now/.test(text)) throw new Error(`the name's line does not say when it is asked next: "${text}"`);
    if (text.includes("in 0.00 ms")) throw new Error(`the name's line counts down to nothing: "${text}"`);
    return text;
  });
}

async function cleanup() {
  try {
    if (context) await context.close();
  } catch {
    /* the browser may already be gone */
  }
  context = null;
  await stopAll();
  agent.destroy();
  try {
    mkdirSync(ARTIFACTS, { recursive: true });
    for (const p of procs) writeFileSync(path.join(ARTIFACTS, `${p.name}.log`), p.out);
    writeFileSync(path.join(ARTIFACTS, "console.log"), consoleLog.join("\n") + (consoleLog.length ? "\n" : ""));
  } catch (e) {
    console.log(`(could not write logs to ${ARTIFACTS}: ${e.message})`);
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  tmp = null;
}

function finish(extraFailure) {
  if (extraFailure) {
    results.push({ name: "run", ok: false });
    console.log(`FAIL - ${extraFailure}`);
  }
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  console.log(`artifacts: ${ARTIFACTS}`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

let finishing = false;
async function abort(why) {
  if (finishing) return;
  finishing = true;
  await cleanup();
  finish(why);
}

for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => abort(`interrupted by ${sig}`));
const watchdog = setTimeout(() => abort(`the whole test took longer than ${OVERALL_TIMEOUT_MS / 1000} s`), OVERALL_TIMEOUT_MS);

main()
  .catch((e) => {
    results.push({ name: "run", ok: false });
    console.log(`FAIL - unexpected error: ${e && e.stack ? e.stack : e}`);
  })
  .then(async () => {
    if (finishing) return;
    finishing = true;
    clearTimeout(watchdog);
    await cleanup();
    finish();
  });
