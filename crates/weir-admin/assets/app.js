// weir dashboard: polls api/v1/stats every second, renders listeners, routes and
// one card per pool, and graphs each pool's req/s, errors/s, p99 latency and queue
// depth over the last 5 minutes, which weir keeps a sample a second: the page asks
// api/v1/stats/history for all of them once, then for the newer ones at each poll, so a
// page opened late draws the past minutes at once. Plain DOM and SVG, no library.
//
// Errors are every request that failed, each under its reason: weir's own answers
// (no_healthy_endpoint, route_not_found, queue_full, ...) and upstream 5xx (upstream_5xx).
//
// Hooks for tests (stable, keep them):
//   body[data-ready="true"]            after the first successful update
//   body[data-updates="N"]             successful updates so far
//   #conn[data-status]                 "connecting" | "ok" | "error"
//   #sum-rps[data-value=V], #sum-eps[data-value=V]  requests and errors per second, all listeners
//   tr[data-listener=NAME], tr[data-route=NAME]
//       td[data-grpc-calls=N][data-grpc-failed=N]  gRPC calls since start, and those not OK
//       td[data-rps=V], td[data-eps=V]             requests and errors per second
//       td.statuses[data-1xx..data-5xx=N]          requests since start by status class
//       td[data-errors=N] [data-reason=R]          failed requests since start, a chip per reason
//   #certs-panel[hidden]               hidden while no listener has TLS
//   #certs tr[data-cert-listener=NAME][data-cert=PATH]
//       [data-names="a,b"]             the certificate's DNS names
//       [data-days-left=D]             days until it expires (negative once expired)
//       [data-expiry=ok|warning|expired]  also as the class cert-warning / cert-expired
//   section.pool[data-pool=NAME]       one card per pool
//       [data-stat=rps|eps|p50|p90|p99][data-value=V]  (V "" when there is none)
//       [data-stat=statuses][data-1xx..data-5xx=N], [data-stat=errors] [data-reason=R]
//   tr[data-endpoint=ADDR][data-state=active|draining|down][data-healthy][data-ejected][data-requests]
//   figure.chart[data-chart=rps|eps|p99|queue]
//       [data-points=N]                samples with a value in the graph's window
//       [data-span=SECS]               the window shown: 60..300 s (grows with weir's history)
//       [data-nonzero=N]               of those, samples with a value above 0
//       [data-last=V]                  the newest value ("" if none)
"use strict";

(function () {
  const STATS_URL = "api/v1/stats";
  const HISTORY_URL = "api/v1/stats/history";
  const POLL_MS = 1000;
  const FETCH_TIMEOUT_MS = 3000;
  const WINDOW_MS = 5 * 60 * 1000; // history kept and the widest graph
  const MIN_SPAN_MS = 60 * 1000; // narrowest graph, while history is short
  const GAP_MS = 2500; // a longer silence between samples breaks the line
  const VIEW_W = 300;
  const VIEW_H = 100;
  const SVG_NS = "http://www.w3.org/2000/svg";
  const CERT_WARN_DAYS = 14; // a certificate expiring sooner is highlighted

  const CHARTS = [
    { key: "rps", title: "requests/s", fmt: (v) => fmtRate(v) + " /s" },
    { key: "eps", title: "errors/s", fmt: (v) => fmtRate(v) + " /s" },
    { key: "p99", title: "p99 latency", fmt: (v) => fmtMs(v) },
    { key: "queue", title: "queue depth", fmt: (v) => fmtInt(v) },
  ];

  /** pool name -> [{t, rps, eps, p99, queue}] oldest first, t in weir's clock (Unix ms) */
  const history = new Map();
  /** The number of the next sample to ask weir for; the newest sample's time. */
  let nextSample = 0;
  let lastSampleT = 0;
  /** weir's uptime at the last update: less now means weir restarted. */
  let lastUptime = 0;
  /** pool name -> card refs */
  const cards = new Map();
  let updates = 0;

  // ---------- small helpers ----------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") el.className = v;
        else if (k === "text") el.textContent = v;
        else if (k.startsWith("data-")) el.dataset[camel(k.slice(5))] = String(v);
        else el.setAttribute(k, v === true ? "" : String(v));
      }
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  function s(tag, attrs) {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    return el;
  }

  function camel(k) {
    return k.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
  }

  function num(v) {
    return typeof v === "number" && Number.isFinite(v) ? v : null;
  }

  function fmtInt(v) {
    v = num(v);
    return v === null ? "–" : Math.round(v).toLocaleString("en-US");
  }

  function fmtRate(v) {
    v = num(v);
    if (v === null) return "–";
    if (v === 0) return "0";
    if (v < 10) return v.toFixed(1);
    return Math.round(v).toLocaleString("en-US");
  }

  function fmtMs(v) {
    v = num(v);
    if (v === null) return "–";
    if (v >= 1000) return (v / 1000).toFixed(v >= 10000 ? 1 : 2) + " s";
    if (v >= 100) return Math.round(v) + " ms";
    if (v >= 10) return v.toFixed(1) + " ms";
    if (v >= 1) return v.toFixed(1) + " ms";
    return v.toFixed(2) + " ms";
  }

  function fmtBytes(v) {
    v = num(v);
    if (v === null) return "–";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return (i === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 1 : 0)) + " " + units[i];
  }

  function fmtUptime(secs) {
    secs = num(secs);
    if (secs === null) return "–";
    let t = Math.floor(secs);
    const d = Math.floor(t / 86400);
    t -= d * 86400;
    const hh = Math.floor(t / 3600);
    t -= hh * 3600;
    const m = Math.floor(t / 60);
    const sec = t - m * 60;
    const p = (n) => String(n).padStart(2, "0");
    if (d > 0) return `${d}d ${p(hh)}h ${p(m)}m`;
    if (hh > 0) return `${hh}h ${p(m)}m ${p(sec)}s`;
    if (m > 0) return `${m}m ${p(sec)}s`;
    return `${sec}s`;
  }

  function fmtClock(t) {
    const d = new Date(t);
    const p = (n) => String(n).padStart(2, "0");
    return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }

  /** 1, 2, 2.5, 5 × 10^k at or above v (v > 0). */
  function niceCeil(v) {
    if (!(v > 0)) return 1;
    const e = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) {
      if (v <= m * e * 1.0000001) return m * e;
    }
    return 10 * e;
  }

  function stateClass(state) {
    return ["active", "draining", "down"].includes(state) ? "state-" + state : "state-unknown";
  }

  /** Errors by reason, largest first, as chips; "none" when empty. */
  function errorChips(errors) {
    const entries = Object.entries(errors || {})
      .filter(([, n]) => num(n) !== null && n > 0)
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    if (entries.length === 0) return h("span", { class: "muted", text: "none" });
    return h(
      "span",
      { class: "errors" },
      entries.map(([reason, n]) =>
        h("span", { class: "chip", "data-reason": reason, title: `${reason}: ${n} since start` }, reason + " ", h("b", { text: fmtInt(n) })),
      ),
    );
  }

  const CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"];

  /** Requests by status class since start (`statuses`), the classes seen, 4xx and 5xx flagged. */
  function statusClasses(statuses) {
    const st = statuses && typeof statuses === "object" ? statuses : {};
    const data = {};
    const parts = [];
    for (const c of CLASSES) {
      const n = num(st[c]) ?? 0;
      data["data-" + c] = n;
      if (n > 0) parts.push(h("span", { class: "cls cls-" + c, title: `${c}: ${n} since start` }, c + " ", h("b", { text: fmtInt(n) })));
    }
    const el = parts.length ? h("span", { class: "classes" }, parts) : h("span", { class: "muted", text: "–" });
    return { data, el };
  }

  /** A bar of used/max; max 0 or missing = no limit. */
  function meter(used, max, title) {
    used = num(used) ?? 0;
    max = num(max) ?? 0;
    const bar = h("span", { class: "bar" });
    const fill = h("span", { class: "fill" });
    bar.append(fill);
    let text;
    if (max > 0) {
      const frac = Math.min(1, used / max);
      fill.style.width = (frac * 100).toFixed(1) + "%";
      if (used >= max) bar.classList.add("full");
      text = `${fmtInt(used)} / ${fmtInt(max)}`;
    } else {
      bar.classList.add("none");
      fill.style.width = "0";
      text = `${fmtInt(used)} / ∞`;
    }
    return h("span", { class: "meter", title: title || null, "data-used": used, "data-max": max }, bar, h("span", { class: "txt", text }));
  }

  // ---------- header, overview, listeners, routes ----------

  function renderHeader(data) {
    const v = data.version;
    const ver = document.getElementById("version");
    ver.textContent = v === undefined || v === null ? "–" : typeof v === "number" ? "v" + v : String(v);
    ver.dataset.version = v === undefined || v === null ? "" : String(v);
    document.getElementById("uptime").textContent = fmtUptime(data.uptime_secs);
    // Where the config comes from, and whether a shared store (etcd) answers: while it
    // does not, this replica serves its last config and refuses changes.
    const src = data.config_source || {};
    const mode = document.getElementById("source");
    mode.textContent = src.mode || "–";
    mode.dataset.mode = src.mode || "";
    mode.title = src.source || "";
    const store = document.getElementById("store");
    store.hidden = !src.problem;
    store.dataset.state = src.problem ? "unreachable" : "ok";
    store.textContent = src.problem
      ? `config store ${src.source} unreachable (${src.problem}): serving the last applied config; changes are refused until it answers`
      : "";
  }

  // ---------- stored resources held back ----------

  // Resources in a shared store (etcd) that do not validate, written there by someone
  // else: this replica holds them back and runs the rest of the config. Listed in a banner
  // of their own under the header, made here so that the page needs nothing else for it.
  function renderInvalid(src) {
    const list = Array.isArray(src.invalid) ? src.invalid : [];
    let panel = document.getElementById("invalid");
    if (!panel) {
      panel = h("div", { id: "invalid", class: "store", role: "alert", "data-state": "invalid", hidden: true });
      document.getElementById("store").after(panel);
    }
    panel.hidden = list.length === 0;
    panel.dataset.count = String(list.length);
    if (!list.length) {
      panel.replaceChildren();
      return;
    }
    const why = (i) => (i.errors || []).map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)).join("; ");
    const n = list.length === 1 ? "1 stored resource does" : `${list.length} stored resources do`;
    panel.replaceChildren(
      h("div", { text: `${n} not validate: held back, the rest of the config runs; fix or delete through the API` }),
      h(
        "ul",
        { style: "margin: 4px 0 0; padding-left: 20px; font-weight: 400" },
        list.map((i) =>
          h(
            "li",
            { "data-path": i.path },
            h("code", { text: i.path }),
            ` (version ${i.version}, ${i.running ? "its last valid version runs" : "not running"}): ${why(i)}`,
          ),
        ),
      ),
    );
  }

  function renderOverview(listeners, pools) {
    let rps = 0, eps = 0, inflight = 0, queued = 0, total = 0, active = 0, down = 0;
    // Every request comes through a listener, routed or not.
    for (const l of listeners) {
      rps += num(l.requests_per_sec) ?? 0;
      eps += num(l.errors_per_sec) ?? 0;
    }
    for (const p of pools) {
      inflight += num(p.in_flight) ?? 0;
      queued += num(p.queue_depth) ?? 0;
      for (const e of p.endpoints || []) {
        total++;
        if (e.state === "active") active++;
        if (e.state === "down") down++;
      }
    }
    const set = (id, text, bad) => {
      const el = document.getElementById(id);
      el.textContent = text;
      el.classList.toggle("bad", !!bad);
      return el;
    };
    set("sum-rps", fmtRate(rps)).dataset.value = String(rps);
    set("sum-eps", fmtRate(eps), eps > 0).dataset.value = String(eps);
    set("sum-inflight", fmtInt(inflight));
    set("sum-queue", fmtInt(queued), queued > 0);
    set("sum-endpoints", `${active} / ${total} active`, down > 0);
    document.getElementById("sum-endpoints").title = down > 0 ? `${down} down` : "";
  }

  function renderTable(id, rows, cols, emptyText) {
    const tbody = document.querySelector(`#${id} tbody`);
    if (!rows.length) {
      tbody.replaceChildren(h("tr", null, h("td", { class: "empty", colspan: cols, text: emptyText })));
      return;
    }
    tbody.replaceChildren(...rows);
  }

  /**
   * The gRPC calls counted under a listener or route (`grpc`: status name -> calls since
   * weir started): how many, and the statuses other than OK, most first. Every call is an
   * HTTP 200, so this is where failing gRPC backends show.
   */
  function grpcCell(grpc) {
    let calls = 0;
    const failed = [];
    for (const [code, n] of Object.entries(grpc && typeof grpc === "object" ? grpc : {})) {
      const v = num(n) ?? 0;
      calls += v;
      if (code !== "OK" && v > 0) failed.push([code, v]);
    }
    const notOk = failed.reduce((a, [, v]) => a + v, 0);
    if (!calls) return h("td", { class: "muted", "data-grpc-calls": 0, "data-grpc-failed": 0, text: "–" });
    failed.sort((a, b) => b[1] - a[1]);
    const shown = failed.slice(0, 3).map(([c, v]) => `${c} ${fmtInt(v)}`);
    if (failed.length > 3) shown.push("…");
    return h(
      "td",
      {
        class: notOk ? "grpc-failing" : null,
        "data-grpc-calls": calls,
        "data-grpc-failed": notOk,
        title: failed.map(([c, v]) => `${c}: ${v}`).join("\n") || "all OK",
      },
      `${fmtInt(calls)} (${notOk ? shown.join(", ") : "all OK"})`,
    );
  }

  /** A listener's or route's traffic: req/s, errors/s, statuses by class, errors by reason. */
  function trafficCells(x) {
    const rps = num(x.requests_per_sec) ?? 0;
    const eps = num(x.errors_per_sec) ?? 0;
    const errors = Object.values(x.errors || {}).reduce((a, n) => a + (num(n) ?? 0), 0);
    const classes = statusClasses(x.statuses);
    return [
      h("td", { class: "num", "data-rps": rps, text: fmtRate(rps) }),
      h("td", { class: "num" + (eps > 0 ? " bad" : ""), "data-eps": eps, text: fmtRate(eps) }),
      h("td", { class: "statuses", ...classes.data }, classes.el),
      h("td", { "data-errors": errors }, errorChips(x.errors)),
    ];
  }

  function renderListeners(listeners) {
    const rows = listeners.map((l) =>
      h(
        "tr",
        { "data-listener": l.name },
        h("td", { text: l.name }),
        h("td", { class: "mono", text: l.bind ?? "–" }),
        h("td", { text: (l.protocol ?? "http") + (l.tls ? " + TLS" : "") }),
        h("td", { text: l.pool ?? "–" }),
        trafficCells(l),
        grpcCell(l.grpc),
      ),
    );
    renderTable("listeners", rows, 9, "no listeners");
  }

  function renderRoutes(routes) {
    const rows = routes.map((r) =>
      h(
        "tr",
        { "data-route": r.name },
        h("td", { text: r.name }),
        h("td", { text: r.listener ?? "–" }),
        h("td", { class: r.host ? "mono" : "muted", text: r.host || "any" }),
        h("td", { class: "mono", text: r.path_prefix || "/" }),
        h("td", { text: r.pool ?? "–" }),
        trafficCells(r),
        grpcCell(r.grpc),
      ),
    );
    renderTable("routes", rows, 10, "no routes: each listener sends everything to its default pool");
  }

  function fmtDate(unixSecs) {
    unixSecs = num(unixSecs);
    if (unixSecs === null) return "–";
    const d = new Date(unixSecs * 1000);
    return Number.isNaN(d.getTime()) ? "–" : d.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }

  function fmtDays(d) {
    d = num(d);
    if (d === null) return "–";
    const a = Math.abs(d);
    const n = a < 10 ? a.toFixed(1) : Math.floor(a).toLocaleString("en-US");
    const text = `${n} days`;
    return d < 0 ? `expired ${text} ago` : text;
  }

  function expiryOf(d) {
    d = num(d);
    if (d === null) return "ok";
    if (d <= 0) return "expired";
    return d < CERT_WARN_DAYS ? "warning" : "ok";
  }

  /** One row per certificate of each TLS listener; the panel is hidden when none has TLS. */
  function renderCerts(listeners) {
    const rows = [];
    for (const l of listeners) {
      const tls = l.tls;
      if (!tls || !Array.isArray(tls.certificates)) continue;
      for (const c of tls.certificates) {
        const names = Array.isArray(c.names) ? c.names : [];
        const expiry = expiryOf(c.days_left);
        const chip =
          expiry === "ok" ? null : h("span", { class: "state " + (expiry === "expired" ? "state-down" : "state-draining"), text: expiry === "expired" ? "expired" : "expires soon" });
        rows.push(
          h(
            "tr",
            {
              class: expiry === "ok" ? null : "cert-" + expiry,
              "data-cert-listener": l.name,
              "data-cert": c.cert ?? "",
              "data-names": names.join(","),
              "data-days-left": num(c.days_left) ?? "",
              "data-expiry": expiry,
            },
            h("td", { text: l.name }),
            h("td", { class: names.length ? "mono" : "muted", title: c.cert ? `file: ${c.cert}` : null, text: names.length ? names.join(", ") : "no DNS names" }),
            h("td", { text: c.default ? "yes" : "no" }),
            h("td", { class: "mono", title: `not before ${fmtDate(c.not_before)}`, text: fmtDate(c.not_after) }),
            h("td", { class: "num days-left" }, chip, chip ? " " : null, fmtDays(c.days_left)),
          ),
        );
      }
    }
    const panel = document.getElementById("certs-panel");
    panel.hidden = rows.length === 0;
    renderTable("certs", rows, 5, "no TLS listeners");
  }

  // ---------- charts ----------

  function makeChart(def) {
    const svg = s("svg", { viewBox: `0 0 ${VIEW_W} ${VIEW_H}`, preserveAspectRatio: "none", role: "img", "aria-label": def.title });
    for (const y of [0, VIEW_H / 2, VIEW_H]) {
      svg.append(s("line", { class: "grid-line", x1: 0, x2: VIEW_W, y1: y, y2: y, "vector-effect": "non-scaling-stroke" }));
    }
    const area = s("path", { class: "area", d: "" });
    const line = s("path", { class: "series", d: "", "vector-effect": "non-scaling-stroke" });
    const cursor = s("line", { class: "cursor", x1: 0, x2: 0, y1: 0, y2: VIEW_H, "vector-effect": "non-scaling-stroke", visibility: "hidden" });
    svg.append(area, line, cursor);

    const cur = h("span", { class: "cur", text: "–" });
    const ymax = h("span", { class: "ymax", text: "" });
    const nodata = h("div", { class: "nodata", text: "no data yet" });
    const plot = h("div", { class: "plot" }, svg, ymax, nodata);
    const fig = h(
      "figure",
      { class: "chart", "data-chart": def.key, "data-points": 0, "data-nonzero": 0, "data-last": "" },
      h("figcaption", null, h("span", { class: "title", text: def.title }), cur),
      plot,
      h("div", { class: "xaxis" }, h("span", { class: "x-left", text: "" }), h("span", { class: "x-mid", text: "" }), h("span", { text: "now" })),
    );
    const chart = { def, fig, svg, area, line, cursor, cur, ymax, nodata, plot, samples: [], now: 0, span: WINDOW_MS, top: 1, hover: null };

    plot.addEventListener("mousemove", (ev) => {
      const r = plot.getBoundingClientRect();
      chart.hover = Math.max(0, Math.min(1, (ev.clientX - r.left) / r.width));
      showHover(chart);
    });
    plot.addEventListener("mouseleave", () => {
      chart.hover = null;
      showHover(chart);
    });
    return chart;
  }

  function xOf(t, now, span) {
    return ((t - (now - span)) / span) * VIEW_W;
  }

  /**
   * The time span the graphs show: the history the page has, rounded up to whole
   * minutes, at least 1 and at most 5, so a page opened a moment ago is readable.
   */
  function graphSpan(now) {
    let oldest = now;
    for (const arr of history.values()) if (arr.length && arr[0].t < oldest) oldest = arr[0].t;
    const minutes = Math.ceil((now - oldest) / MIN_SPAN_MS);
    return Math.min(WINDOW_MS, Math.max(MIN_SPAN_MS, minutes * MIN_SPAN_MS));
  }

  function spanLabel(ms) {
    const m = ms / 60000;
    return Number.isInteger(m) ? `${m} min` : m >= 1 ? `${m.toFixed(1).replace(".5", "½")} min` : `${Math.round(ms / 1000)} s`;
  }

  function drawChart(chart, samples, now, span) {
    const key = chart.def.key;
    const inWindow = samples.filter((p) => p.t >= now - span);
    const valued = inWindow.filter((p) => num(p[key]) !== null);
    let max = 0;
    for (const p of valued) max = Math.max(max, p[key]);
    const top = niceCeil(max);
    const yOf = (v) => VIEW_H - (v / top) * VIEW_H;

    // Segments: consecutive samples with values and no long silence between them.
    const segments = [];
    let seg = [];
    let prevT = null;
    for (const p of inWindow) {
      const v = num(p[key]);
      if (v === null || (prevT !== null && p.t - prevT > GAP_MS)) {
        if (seg.length) segments.push(seg);
        seg = [];
      }
      if (v !== null) seg.push([xOf(p.t, now, span), yOf(v)]);
      prevT = p.t;
    }
    if (seg.length) segments.push(seg);

    let d = "";
    let a = "";
    const f = (n) => n.toFixed(2);
    for (const sg of segments) {
      if (sg.length === 1) {
        const [x, y] = sg[0];
        d += `M${f(x - 0.4)},${f(y)}L${f(x + 0.4)},${f(y)}`;
        continue;
      }
      d += "M" + sg.map(([x, y]) => `${f(x)},${f(y)}`).join("L");
      a += `M${f(sg[0][0])},${VIEW_H}L` + sg.map(([x, y]) => `${f(x)},${f(y)}`).join("L") + `L${f(sg[sg.length - 1][0])},${VIEW_H}Z`;
    }
    chart.line.setAttribute("d", d);
    chart.area.setAttribute("d", a);

    chart.samples = inWindow;
    chart.now = now;
    chart.span = span;
    chart.top = top;
    const left = spanLabel(span) + " ago";
    if (chart.fig.dataset.span !== String(span / 1000)) {
      chart.fig.dataset.span = String(span / 1000);
      chart.fig.querySelector(".x-left").textContent = left;
      chart.fig.querySelector(".x-mid").textContent = spanLabel(span / 2);
    }
    chart.ymax.textContent = valued.length ? chart.def.fmt(top) : "";
    chart.nodata.hidden = valued.length > 0;
    chart.nodata.textContent = key === "p99" && inWindow.length > 0 ? "no traffic" : "no data yet";

    const last = valued.length ? valued[valued.length - 1][key] : null;
    chart.fig.dataset.points = String(valued.length);
    chart.fig.dataset.nonzero = String(valued.filter((p) => p[key] > 0).length);
    chart.fig.dataset.last = last === null ? "" : String(last);
    showHover(chart);
  }

  function showHover(chart) {
    const key = chart.def.key;
    const newest = chart.samples.length ? chart.samples[chart.samples.length - 1] : null;
    if (chart.hover === null || !chart.samples.length) {
      chart.cursor.setAttribute("visibility", "hidden");
      chart.cur.textContent = newest ? chart.def.fmt(newest[key]) : "–";
      return;
    }
    const t = chart.now - chart.span + chart.hover * chart.span;
    let best = chart.samples[0];
    for (const p of chart.samples) if (Math.abs(p.t - t) < Math.abs(best.t - t)) best = p;
    const x = xOf(best.t, chart.now, chart.span);
    chart.cursor.setAttribute("x1", x.toFixed(2));
    chart.cursor.setAttribute("x2", x.toFixed(2));
    chart.cursor.setAttribute("visibility", "visible");
    chart.cur.textContent = `${fmtClock(best.t)} · ${chart.def.fmt(best[key])}`;
  }

  // ---------- pools ----------

  function makeCard(name) {
    const el = h("section", { class: "pool", "data-pool": name, "aria-label": `pool ${name}` });
    const title = h("h3", { text: name });
    const balance = h("span", { class: "balance" });
    const stats = h("div", { class: "stats" });
    const head = h("div", { class: "pool-head" }, title, balance, stats);
    const charts = CHARTS.map(makeChart);
    const chartRow = h("div", { class: "charts" }, charts.map((c) => c.fig));
    const tbody = h("tbody");
    const table = h(
      "table",
      { class: "endpoints" },
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          h("th", { text: "state" }),
          h("th", { text: "endpoint" }),
          h("th", { class: "num", text: "weight" }),
          h("th", { text: "health" }),
          h("th", { text: "in flight / max_conn" }),
          h("th", { class: "num", text: "req/s" }),
          h("th", { class: "num", text: "requests" }),
          h("th", { class: "num", text: "p50" }),
          h("th", { class: "num", text: "p99" }),
          h("th", { text: "errors by reason" }),
          h("th", { class: "num", text: "in / out" }),
        ),
      ),
      tbody,
    );
    // The DNS names the pool follows, when it has any.
    const names = h("div", { class: "names" });
    el.append(head, names, chartRow, h("div", { class: "scroll" }, table));
    return { el, balance, stats, charts, tbody, names };
  }

  function stat(k, v, opts) {
    opts = opts || {};
    const vEl = v instanceof Node ? v : h("span", { class: "v" + (opts.bad ? " bad" : ""), text: v });
    const data = opts.data || {};
    if ("value" in opts) data["data-value"] = opts.value === null ? "" : opts.value;
    return h("span", { class: "stat", "data-stat": opts.id || null, ...data }, h("span", { class: "k", text: k }), vEl);
  }

  function renderPool(card, p, samples, now, span) {
    card.balance.textContent = p.balance ? String(p.balance).replace(/_/g, " ") : "";
    const eps = num(p.errors_per_sec) ?? 0;
    const lat = p.latency_ms || {};
    const endpoints = p.endpoints || [];
    const nDown = endpoints.filter((e) => e.state === "down").length;
    const nActive = endpoints.filter((e) => e.state === "active").length;
    card.el.dataset.endpoints = String(endpoints.length);
    card.el.dataset.down = String(nDown);
    const classes = statusClasses(p.statuses);
    card.stats.replaceChildren(
      stat("req/s", fmtRate(p.requests_per_sec), { id: "rps", value: num(p.requests_per_sec) }),
      stat("errors/s", fmtRate(eps), { id: "eps", bad: eps > 0, value: eps }),
      stat("in flight", fmtInt(p.in_flight), { id: "in_flight" }),
      stat("queue", meter(p.queue_depth, p.max_queue, "requests waiting / max_queue"), { id: "queue" }),
      stat("p50", fmtMs(lat.p50), { id: "p50", value: num(lat.p50) }),
      stat("p90", fmtMs(lat.p90), { id: "p90", value: num(lat.p90) }),
      stat("p99", fmtMs(lat.p99), { id: "p99", value: num(lat.p99) }),
      stat("endpoints", `${nActive}/${endpoints.length} active`, { id: "endpoints", bad: nDown > 0 }),
      stat("answers", classes.el, { id: "statuses", data: classes.data }),
      stat("errors", errorChips(p.errors), { id: "errors" }),
    );

    card.names.replaceChildren(
      ...(p.names || []).map((n) => {
        const bad = n.result !== "ok";
        const n_addr = (n.addresses || []).length;
        // Past its time, the next query is out (a slow server's answer can take seconds).
        const wait = num(n.next_query_in_ms);
        const next = wait > 0 ? `next query in ${fmtMs(wait)}` : "being asked now";
        const text = bad
          ? `${n.name}: ${n.result} (${n.error || "no answer"}), ${n_addr ? `keeping its last ${n_addr} addresses` : "no endpoint from it yet"}; ${next}`
          : `${n.name}: ${n_addr} addresses; ${next}`;
        return h("p", {
          class: "dns-name" + (bad ? " bad" : ""),
          "data-name": n.name,
          "data-result": n.result,
          title: (n.addresses || []).join(" "),
          text,
        });
      }),
    );

    for (const c of card.charts) drawChart(c, samples, now, span);

    const rows = endpoints.map((e) => {
      const healthy = e.healthy !== false;
      const ejected = e.ejected === true;
      const elat = e.latency_ms || {};
      const health = h(
        "td",
        null,
        h("span", { class: healthy ? "health-ok" : "health-bad", text: healthy ? "✓ healthy" : "✗ unhealthy" }),
        ejected ? [" ", h("span", { class: "chip", title: "ejected after failures on real traffic", text: "ejected" })] : null,
      );
      return h(
        "tr",
        {
          "data-endpoint": e.addr,
          "data-state": e.state || "unknown",
          "data-healthy": String(healthy),
          "data-ejected": String(ejected),
          "data-requests": num(e.requests_total) ?? 0,
        },
        h("td", null, h("span", { class: "state " + stateClass(e.state), text: e.state || "?" })),
        h("td", { class: "mono", text: e.addr }),
        h("td", { class: "num", text: fmtInt(e.weight) }),
        health,
        h("td", null, meter(e.in_flight, e.max_conn, "in flight / max_conn")),
        h("td", { class: "num", text: fmtRate(e.requests_per_sec) }),
        h("td", { class: "num", text: fmtInt(e.requests_total) }),
        h("td", { class: "num", text: fmtMs(elat.p50) }),
        h("td", { class: "num", text: fmtMs(elat.p99) }),
        h("td", null, errorChips(e.errors)),
        h("td", { class: "num", title: "bytes in / out", text: `${fmtBytes(e.bytes_in)} / ${fmtBytes(e.bytes_out)}` }),
      );
    });
    if (rows.length) card.tbody.replaceChildren(...rows);
    else card.tbody.replaceChildren(h("tr", null, h("td", { class: "empty", colspan: 11, text: "no endpoints" })));
  }

  function renderPools(pools, now) {
    const container = document.getElementById("pools");
    const seen = new Set();
    const order = [];
    const span = graphSpan(now);
    for (const p of pools) {
      if (typeof p.name !== "string" || seen.has(p.name)) continue;
      seen.add(p.name);
      let card = cards.get(p.name);
      if (!card) {
        card = makeCard(p.name);
        cards.set(p.name, card);
      }
      renderPool(card, p, history.get(p.name) || [], now, span);
      order.push(card.el);
    }
    // Pools gone from the config (a reload) lose their card and their history.
    for (const name of [...cards.keys()]) {
      if (!seen.has(name)) {
        cards.get(name).el.remove();
        cards.delete(name);
        history.delete(name);
      }
    }
    if (!order.length) {
      container.replaceChildren(h("p", { class: "empty", text: "no pools configured" }));
      return;
    }
    // Reorder only when needed, so hovering a graph is not interrupted.
    const current = [...container.children];
    if (current.length !== order.length || current.some((el, i) => el !== order[i])) {
      container.replaceChildren(...order);
    }
  }

  /**
   * Adds weir's samples (api/v1/stats/history: columns aligned with `t`) to the graphs'
   * history, and drops what is older than the widest graph. A `next` below the one asked
   * for is a weir restarted since: its samples replace the old ones.
   */
  function mergeHistory(hist, from, restarted) {
    if (!hist || !Array.isArray(hist.t)) return;
    if (restarted || (num(hist.next) !== null && hist.next < from)) {
      // Samples of the weir before: the next poll asks the new one for all of its own.
      history.clear();
      nextSample = 0;
      lastSampleT = 0;
      return;
    }
    const t = hist.t;
    const at = (arr, i) => (Array.isArray(arr) ? num(arr[i]) : null);
    for (const p of Array.isArray(hist.pools) ? hist.pools : []) {
      if (typeof p.name !== "string") continue;
      let arr = history.get(p.name);
      if (!arr) history.set(p.name, (arr = []));
      for (let i = 0; i < t.length; i++) {
        if (arr.length && arr[arr.length - 1].t >= t[i]) continue;
        arr.push({
          t: t[i],
          rps: at(p.requests_per_sec, i),
          eps: at(p.errors_per_sec, i),
          p99: at(p.p99_ms, i),
          queue: at(p.queue_depth, i),
        });
      }
    }
    if (num(hist.next) !== null) nextSample = hist.next;
    if (t.length) lastSampleT = Math.max(lastSampleT, t[t.length - 1]);
    for (const arr of history.values()) {
      while (arr.length && arr[0].t < lastSampleT - WINDOW_MS - POLL_MS) arr.shift();
    }
  }

  // ---------- polling ----------

  function setConn(status, text) {
    const conn = document.getElementById("conn");
    conn.dataset.status = status;
    document.getElementById("conn-text").textContent = text;
    document.body.classList.toggle("stale", status === "error" && updates > 0);
  }

  async function fetchJson(url) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT_MS);
    try {
      const res = await fetch(url, { cache: "no-store", signal: ctl.signal, headers: { Accept: "application/json" } });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      return await res.json();
    } catch (e) {
      if (e && e.name === "AbortError") throw new Error("timed out");
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  function update(data, hist, from) {
    const uptime = num(data.uptime_secs) ?? 0;
    mergeHistory(hist, from, uptime < lastUptime);
    lastUptime = uptime;
    // The graphs end at weir's newest sample (its clock, not this browser's).
    const now = lastSampleT || Date.now();
    const pools = Array.isArray(data.pools) ? data.pools : [];
    const listeners = Array.isArray(data.listeners) ? data.listeners : [];
    renderHeader(data);
    renderInvalid(data.config_source || {});
    renderOverview(listeners, pools);
    renderListeners(listeners);
    renderCerts(Array.isArray(data.listeners) ? data.listeners : []);
    renderRoutes(Array.isArray(data.routes) ? data.routes : []);
    renderPools(pools, now);
    updates++;
    document.body.dataset.updates = String(updates);
    document.body.dataset.ready = "true";
    setConn("ok", `live · updated ${fmtClock(Date.now())}`);
  }

  async function poll() {
    const started = Date.now();
    let data = null;
    let hist = null;
    const from = nextSample;
    try {
      [data, hist] = await Promise.all([fetchJson(STATS_URL), fetchJson(`${HISTORY_URL}?from=${from}`)]);
    } catch (e) {
      // Not a console error: the admin server being away is a state the page shows.
      setConn("error", `no answer from weir (${(e && e.message) || e}); retrying`);
    }
    if (data !== null) {
      try {
        update(data, hist, from);
      } catch (e) {
        // A bug in this page (or an unexpected stats shape): show it and report it.
        setConn("error", `cannot show the stats: ${(e && e.message) || e}`);
        console.error("weir dashboard:", e);
      }
    }
    setTimeout(poll, Math.max(0, POLL_MS - (Date.now() - started)));
  }

  poll();
})();
