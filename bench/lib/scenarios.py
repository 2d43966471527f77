"""Scenarios: what upstreams to start, which proxies to compare, how to load them,
and which columns the table shows.

To add a scenario (as the capacity and resilience runs were),
subclass `Scenario`, implement `start_upstreams`, `check` and `load` (return a
dict with at least `units`, the count CPU is divided by, plus the metrics your
columns name), set `columns`, and register it in `SCENARIOS`. The runner in
bench.py then does rounds, alternation, CPU/RSS/syscall measurement, medians,
ratios and the table for it. Override `start` to pass a balance algorithm or
pool settings to the proxies (see proxies.start_proxy).
"""

from __future__ import annotations

import http.client
import json
import math
import os
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness import PROCS, BenchError, Proc, port_open, process_tree
from report import per_round
import ghz
import oha
from proxies import (HOST, Ctx, Upstream, Variant, start_bench_upstream, start_etcd, start_fake_upstream,
                     start_grpc_upstream, start_nginx_upstream, start_proxy, start_weir_admin)

LIB = Path(__file__).resolve().parent
WRK_LUA = LIB.parent / "configs" / "wrk-report.lua"


def against(r: float, limit: float) -> str:
    """A ratio as a goal line shows it: two decimals, or three where two would read as the
    bound itself (1.104 is not met at 1.1; "1.10 × ... not met" reads as a slip)."""
    two = f"{r:.2f}"
    return f"{r:.3f}" if two == f"{limit:.2f}" and r != limit else two


@dataclass
class Column:
    header: str
    key: str
    fmt: str = "{:.0f}"
    ratio: bool = True  # show weir/peer for this column
    agg: str = "median"  # across rounds: "median", "sum" (failure counts) or "min" (the worst of a share)


class Scenario:
    name = ""
    hidden: list = []  # columns aggregated over rounds like `columns`, but not shown
    title = ""          # one line for the table heading
    protocol = "http"   # which config templates the proxies use
    unit = "req"        # what CPU and syscalls are divided by
    cpu_scale = 1.0     # cpu µs per unit is divided by this (1e6 for seconds per GiB)
    cpu_unit = "µs/req"
    columns: list[Column] = []

    syscall_pass = True  # a separate run per proxy under perf/strace
    own_timing = False   # rounds/duration not from BENCH_ROUNDS/BENCH_SECONDS defaults
    row_header = "proxy"  # the table's first column: what a row is

    def __init__(self, opts: dict):
        self.opts = opts

    def run_seconds(self) -> float:
        """Measured seconds per run."""
        return self.opts["seconds"]

    def rounds(self) -> int:
        return self.opts["rounds"]

    def notes(self, res: dict) -> list[str]:
        """Lines printed under the table (e.g. what the failures were)."""
        return []

    def calibrate(self, ctx: Ctx, upstreams: list[Upstream]) -> dict | None:
        """Optional measurement without any proxy, once per scenario (kept in results as
        `calibration`; its `summary` is logged)."""
        return None

    def variants(self) -> list[Variant]:
        return [Variant("weir", "weir", 1), Variant("weir-2t", "weir", 2),
                Variant("haproxy", "haproxy"), Variant("nginx", "nginx")]

    def describe(self) -> str:
        return self.title

    def start_upstreams(self, ctx: Ctx) -> list[Upstream]:
        raise NotImplementedError

    def start(self, ctx: Ctx, v: Variant, upstreams: list[Upstream], tag: str) -> Proc:
        return start_proxy(ctx, v, v.params.get("protocol", self.protocol), upstreams, tag)

    def stop(self, p: Proc) -> None:
        """Ends a run: stops what `start` started (a scenario that starts more than the
        process it returns stops the rest too)."""
        PROCS.stop(p)

    def check(self, ctx: Ctx) -> None:
        """One correct exchange through the proxy, or BenchError."""

    def load(self, ctx: Ctx, seconds: int, warmup: bool = False) -> dict:
        raise NotImplementedError

    # the speed goal this scenario is judged by: (max weir CPU ÷ best peer CPU, peers
    # considered, whether weir's p99 must also be ≤ the best peer's); None = no goal
    goal: tuple[float, tuple[str, ...], bool] | None = None
    # weir's rows that get ratio rows, per-round ratios and a goal line
    compared: tuple[str, ...] = ("weir",)

    def goal_line(self, med: dict, row: str = "weir") -> str | None:
        if self.goal is None or row not in med:
            return None
        limit, peers, p99 = self.goal
        have = [p for p in peers if p in med and med[p].get("cpu_total")]
        if not have or not med[row].get("cpu_total"):
            return None
        best = min(have, key=lambda p: med[p]["cpu_total"])
        cpu = med[row]["cpu_total"] / med[best]["cpu_total"]
        ok = cpu <= limit
        want = f"CPU/{self.unit} ≤ {limit:g} × {'the better of ' + ' and '.join(peers) if len(peers) > 1 else peers[0]}"
        got = f"{row}'s CPU is {against(cpu, limit)} × {best}'s"
        if p99:
            lat = [p for p in have if med[p].get("p99_ms")]
            if lat and med[row].get("p99_ms"):
                bestl = min(lat, key=lambda p: med[p]["p99_ms"])
                r = med[row]["p99_ms"] / med[bestl]["p99_ms"]
                ok = ok and r <= 1.0
                want += ", p99 ≤ theirs"
                got += f", p99 {r:.2f} × {bestl}'s"
        return f"Goal: {want}: {'**met**' if ok else 'not met'} ({got})."


# --------------------------------------------------------------------------
# HTTP via wrk


def run_wrk(url: str, conns: int, seconds: int, threads: int, headers: list[str]) -> dict:
    argv = ["wrk", "-t", str(min(threads, conns)), "-c", str(conns), "-d", f"{seconds}s", "--timeout", "5s",
            "-s", str(WRK_LUA)]
    for h in headers:
        argv += ["-H", h]
    argv.append(url)
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30)
    except subprocess.TimeoutExpired:
        raise BenchError(f"wrk did not finish within {seconds + 30}s") from None
    for line in r.stdout.splitlines():
        if line.startswith("WRKJSON "):
            return json.loads(line[len("WRKJSON "):])
    raise BenchError(f"wrk failed (rc {r.returncode}): {(r.stderr or r.stdout).strip()[-200:]}")


def http_get(port: int, path: str, close: bool = False, headers: list[str] = ()) -> tuple[int, bytes]:
    """`headers`: more fields, as wrk takes them (`Name: value`)."""
    c = http.client.HTTPConnection(HOST, port, timeout=5)
    fields = dict(h.split(": ", 1) for h in headers)
    if close:
        fields["Connection"] = "close"
    try:
        c.request("GET", path, headers=fields)
        r = c.getresponse()
        return r.status, r.read()
    except (OSError, http.client.HTTPException) as e:
        raise BenchError(f"GET {path} through the proxy failed: {e!r}") from None
    finally:
        c.close()


class HttpScenario(Scenario):
    scheme = "http"
    path = "/small"
    body_len = 12
    conns = 50
    close = False

    @property
    def columns(self):
        cols = [Column("req/s", "rps"), Column("p50 ms", "p50_ms", "{:.2f}"), Column("p99 ms", "p99_ms", "{:.2f}")]
        if self.body_len >= 1 << 20:
            cols.append(Column("MiB/s", "mib_s"))
        return cols + cpu_columns(self) + [Column("errors", "errors", "{:.0f}", ratio=False)]

    def describe(self):
        c = "a new connection per request" if self.close else "keep-alive"
        return (f"{self.title}: {self.body_len} B responses, {self.conns} connections ({c}), "
                f"wrk -t{self.opts['wrk_threads']}")

    def start_upstreams(self, ctx):
        www = ctx.run / "www"
        www.mkdir(parents=True, exist_ok=True)
        big = www / "large.bin"
        if not big.exists() or big.stat().st_size != 1 << 20:
            big.write_bytes(os.urandom(1 << 20))
        os.chmod(www, 0o755)
        os.chmod(big, 0o644)
        return [start_nginx_upstream(ctx, i, www) for i in (1, 2)]

    def check(self, ctx):
        for _ in range(4):  # both upstreams, twice
            status, body = http_get(ctx.proxy_port, self.path, self.close, self.request_headers())
            if status != 200 or len(body) != self.body_len:
                raise BenchError(f"GET {self.path} through the proxy: status {status}, "
                                 f"{len(body)} body bytes (want 200, {self.body_len}): {body[:80]!r}")

    def request_headers(self) -> list[str]:
        return ["Connection: close"] if self.close else []

    def load(self, ctx, seconds, warmup=False):
        w = run_wrk(f"{self.scheme}://{HOST}:{ctx.proxy_port}{self.path}", self.conns, seconds,
                    self.opts["wrk_threads"], self.request_headers())
        secs = w["duration_us"] / 1e6
        errors = (w["connect_errors"] + w["read_errors"] + w["write_errors"] + w["status_errors"]
                  + w["timeouts"])
        if w["requests"] == 0:
            raise BenchError(f"no request completed ({errors} errors)")
        return {"units": w["requests"], "rps": w["requests"] / secs, "p50_ms": w["p50_us"] / 1000,
                "p99_ms": w["p99_us"] / 1000, "mib_s": w["bytes"] / secs / (1 << 20), "errors": errors,
                "wrk": w}


class HttpSmall(HttpScenario):
    """Also relays the same traffic at L4 (weir-l4, nginx-l4: each client
    connection spliced to one upstream connection, one read and one write per
    message each way, no HTTP parsing): what a proxy spends when it does nothing
    but move the bytes, the floor under every HTTP row."""
    name, title = "http-small", "http-small"
    goal = (0.8, ("haproxy", "nginx"), True)
    relays = ("weir-l4", "nginx-l4")

    def variants(self):
        return super().variants() + [Variant("weir-l4", "weir", 1, params={"protocol": "tcp"}),
                                     Variant("nginx-l4", "nginx", params={"protocol": "tcp"})]

    def describe(self):
        return super().describe() + "; weir-l4 and nginx-l4 relay the same traffic at L4 (the floor)"

    def goal_line(self, med):
        line = super().goal_line(med)
        peers = [p for p in self.goal[1] if med.get(p, {}).get("cpu_total")]
        relays = [r for r in self.relays if med.get(r, {}).get("cpu_total")]
        if not line or not peers or not relays:
            return line
        best = min(peers, key=lambda p: med[p]["cpu_total"])
        floor = min(relays, key=lambda r: med[r]["cpu_total"])
        return line + (f" Floor: {floor}, moving the same bytes without HTTP, spends "
                       f"{med[floor]['cpu_total'] / med[best]['cpu_total']:.2f} × {best}'s CPU; "
                       f"weir spends {med['weir']['cpu_total'] / med[floor]['cpu_total']:.2f} × the floor.")


# What a route's filter chain costs: the same route with no filters, and with a chain of the
# common kinds, each doing real work per request (a request id made, fields set and removed,
# a regex rewrite, an allow list, cors, basic_auth's cached check): the five-filter chain the
# goal line judges.
FILTER_CHAIN = """
[filters.ids]
kind = "headers"
request_id = "X-Request-Id"
request_set = { "X-Real-IP" = "{client_ip}", "X-Env" = "bench" }
response_set = { "X-Frame-Options" = "DENY" }
response_remove = ["Server"]

[filters.rewrite]
kind = "rewrite"
path_regex = "^/(small)$"
path_replacement = "/$1"

[filters.office]
kind = "ip_allow"
addresses = ["10.0.0.0/8", "127.0.0.0/8", "::1"]

[filters.cors]
kind = "cors"
allow_origins = ["https://app.example.com", "https://*.example.org"]
allow_credentials = true
expose_headers = ["X-Request-Id"]

[filters.users]
kind = "basic_auth"
users_file = "${USERS}"
user_header = "X-User"

"""
# Both weir rows go through this route; weir-chain's has the chain.
FILTER_ROUTE = """
[routes.all]
listener = "web"
pool = "app"
"""
# user `bench`, password `bench`, bcrypt cost 10 (`htpasswd -nbB -C 10 bench bench`): the
# first request pays the bcrypt check, the rest hit basic_auth's cache.
FILTER_USERS = "bench:$2y$10$XregBsOWn9k1MX9GkBn7EeOw1Z2QJtgoqFCGEzj0Ptx/joDqinj2e\n"
# Every row gets the same request: a browser's cross-origin GET with its user's credentials.
FILTER_HEADERS = ["Origin: https://app.example.com", "Authorization: Basic YmVuY2g6YmVuY2g="]


class HttpFilters(HttpScenario):
    """http-small through a route without filters (`weir`) and through a five-filter chain
    (`weir-chain`): what the chain adds per request. HAProxy and nginx rows as in
    http-small, for scale."""
    name, title = "http-filters", "http-filters"
    compared = ("weir", "weir-chain")

    def variants(self):
        return [Variant("weir", "weir", 1), Variant("weir-chain", "weir", 1, params={"chain": True}),
                Variant("haproxy", "haproxy"), Variant("nginx", "nginx")]

    def start(self, ctx, v, upstreams, tag):
        extra = FILTER_ROUTE
        if v.params.get("chain"):
            users = ctx.run / "bench.htpasswd"
            users.write_text(FILTER_USERS)
            extra = (FILTER_CHAIN.replace("${USERS}", str(users)) + FILTER_ROUTE
                     + 'filters = ["ids", "rewrite", "office", "cors", "users"]\n')
        return start_proxy(ctx, v, "http", upstreams, tag, pool_extra=extra)

    def describe(self):
        return super().describe() + ("; weir-chain: the same route with five filters (headers with a request id, "
                                     "a regex rewrite, an allow list, cors, basic_auth with its cache); every "
                                     "request carries an Origin and Basic credentials")

    def request_headers(self):
        return FILTER_HEADERS

    def notes(self, res):
        # The two rows ran seconds apart in each round: a round's ratio is less touched by
        # the machine's other work than the ratio of medians taken over different rounds.
        lines = []
        for base, chain in (("weir", "weir-chain"), ("weir-pgo", "weir-chain-pgo")):
            rs = per_round(res, chain, base)
            if len(rs) >= 2:
                lines.append(f"Per round, {chain}'s CPU ÷ {base}'s: {' '.join(f'{r:.2f}' for r in rs)} "
                             f"(median {statistics.median(rs):.2f}).")
        return lines

    def goal_line(self, med, row="weir"):
        if not med.get("weir", {}).get("cpu_total") or not med.get("weir-chain", {}).get("cpu_total"):
            return None
        r = med["weir-chain"]["cpu_total"] / med["weir"]["cpu_total"]
        return (f"Goal: a five-filter chain ≤ 1.1 × the CPU per request without filters: "
                f"{'**met**' if r <= 1.1 else 'not met'} (weir-chain is {against(r, 1.1)} × weir).")


class HttpLarge(HttpScenario):
    name, title = "http-large", "http-large"
    path, body_len, conns = "/large", 1 << 20, 8


class HttpConn(HttpScenario):
    name, title = "http-conn", "http-conn"
    close = True
    goal = (1.0, ("haproxy", "nginx"), False)


class HttpLargePaced(HttpScenario):
    """http-large at a fixed rate every proxy sustains: wrk's closed loop gives the
    fastest proxy the most contention on two shared cores, so its p99 there mixes
    speed with latency. Here each of 8 keep-alive clients sends a request every
    BENCH_PACE_MS (default 20 ms: ~400 MiB/s in all), whatever the answers took."""
    name, title = "http-large-paced", "http-large-paced"
    path, body_len, conns = "/large", 1 << 20, 8
    syscall_pass = False

    @property
    def columns(self):
        return ([Column("req/s", "rps"), Column("p50 ms", "p50_ms", "{:.2f}"),
                 Column("p90 ms", "p90_ms", "{:.2f}"), Column("p99 ms", "p99_ms", "{:.2f}"),
                 Column("max ms", "max_ms", "{:.1f}")]
                + cpu_columns(self) + [Column("errors", "errors", "{:.0f}", ratio=False)])

    def describe(self):
        pace = self.pace()
        return (f"{self.title}: {self.body_len} B responses, {self.conns} keep-alive clients, one "
                f"request every {pace} ms each (weir-bench paced, ~{self.conns * 1000 / pace:.0f} req/s)")

    def pace(self) -> float:
        return env_float("BENCH_PACE_MS", 20)

    def load(self, ctx, seconds, warmup=False):
        pace = f"{self.pace():g}"
        r = run_bench(ctx, ["paced", "--connect", f"{HOST}:{ctx.proxy_port}", "--clients", self.conns,
                            "--path", self.path, "--pace", pace, "--duration", seconds,
                            "--timeout", 10], seconds + 40)
        if r["ok"] == 0:
            raise BenchError(f"no request completed: {r.get('kinds')}")
        return {"units": r["ok"], "rps": r["ok_per_s"], "p50_ms": r["p50_us"] / 1000,
                "p90_ms": r["p90_us"] / 1000, "p99_ms": r["p99_us"] / 1000, "max_ms": r["max_us"] / 1000,
                "errors": r["failed"], "raw": r}


# --------------------------------------------------------------------------
# HTTPS: the proxies terminate TLS


def awslc_exe() -> str:
    """weir built with aws-lc-rs as its provider (run.sh builds it into its own target dir)."""
    return os.environ.get("BENCH_WEIR_AWSLC") or str(LIB.parents[1] / "target" / "awslc" / "release" / "weir")


TLS_NAME = "bench.test"  # the certificate's name (SNI, Host); clients connect to the address


def https_get(port: int, path: str, close: bool = False) -> tuple[int, bytes]:
    """One GET over TLS 1.3 only: the scenarios claim the proxy speaks it."""
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE  # the run's self-signed pair
    tls.minimum_version = ssl.TLSVersion.TLSv1_3
    c = http.client.HTTPSConnection(HOST, port, timeout=5, context=tls)
    try:
        c.request("GET", path, headers={"Host": TLS_NAME, **({"Connection": "close"} if close else {})})
        r = c.getresponse()
        return r.status, r.read()
    except (OSError, http.client.HTTPException) as e:
        raise BenchError(f"GET {path} over TLS 1.3 through the proxy failed: {e!r}") from None
    finally:
        c.close()


class TlsScenario(HttpScenario):
    """Every proxy terminates TLS with the same ECDSA P-256 pair (made per run by
    openssl), TLS 1.2 and 1.3 allowed, each its default ciphers and resumption
    (tickets); the upstreams are plain HTTP as in http-small. Rows: weir with
    ring (its default provider) and with aws-lc-rs (`weir-awslc`)."""
    protocol, scheme = "https", "https"
    goal = (0.8, ("haproxy", "nginx"), False)
    compared = ("weir", "weir-awslc")

    def variants(self):
        return [Variant("weir", "weir", 1), Variant("weir-awslc", "weir", 1, exe=awslc_exe()),
                Variant("haproxy", "haproxy"), Variant("nginx", "nginx")]

    def start(self, ctx, v, upstreams, tag):
        err = os.environ.get("BENCH_WEIR_AWSLC_ERROR")
        if v.name == "weir-awslc" and err:
            raise BenchError(err)
        return super().start(ctx, v, upstreams, tag)

    def check(self, ctx):
        for _ in range(4):  # both upstreams, twice
            status, body = https_get(ctx.proxy_port, self.path, self.close)
            if status != 200 or len(body) != self.body_len:
                raise BenchError(f"GET {self.path} over TLS through the proxy: status {status}, "
                                 f"{len(body)} body bytes (want 200, {self.body_len}): {body[:80]!r}")

    def goal_line(self, med):
        lines = []
        for row in self.compared:
            line = super().goal_line(med, row)
            if line:
                lines.append(line)
        return " ".join(lines) or None


class HttpsSmall(TlsScenario):
    name, title = "https-small", "https-small"

    def describe(self):
        return (super().describe() + "; wrk over TLS 1.3 (OpenSSL), one handshake per connection, then "
                "CPU per request; same ECDSA P-256 pair everywhere, weir-awslc: weir built with aws-lc-rs")


class HttpsConns(TlsScenario):
    """A new connection per request: weir-bench https (rustls, TLS 1.3 only, X25519),
    since wrk resumes every session it reconnects (it keeps its SSL object and with it
    the session) and so cannot measure a full handshake."""
    unit, cpu_unit = "conn", "µs/conn"
    close = True
    resume = False

    @property
    def columns(self):
        return ([Column("conn/s", "cps"), Column("p50 ms", "p50_ms", "{:.2f}"), Column("p99 ms", "p99_ms", "{:.2f}")]
                + cpu_columns(self) + [Column("resumed %", "resumed_pct", "{:.1f}", ratio=False),
                                       Column("errors", "errors", "{:.0f}", ratio=False)])

    def describe(self):
        how = ("resuming the session with a ticket from its previous connection (a session cache per loop; "
               "TLS 1.3 PSK with X25519)" if self.resume else "a full TLS 1.3 handshake (no client session cache)")
        return (f"{self.title}: {self.conns} concurrent loops of connect, {how}, one `GET {self.path}` with "
                f"`Connection: close` ({self.body_len} B), read to the close (weir-bench https: rustls client, "
                f"TLS 1.3 only, X25519, certificate not checked); CPU per connection = per handshake + one "
                f"request; same ECDSA P-256 pair everywhere, weir-awslc: weir built with aws-lc-rs")

    def load(self, ctx, seconds, warmup=False):
        args = ["https", "--connect", f"{HOST}:{ctx.proxy_port}", "--server-name", TLS_NAME, "--path", self.path,
                "--concurrency", self.conns, "--duration", seconds, "--threads", self.opts["wrk_threads"]]
        r = run_bench(ctx, args + (["--resume"] if self.resume else []), seconds + 30)
        if not r["requests"]:
            raise BenchError(f"no request completed: {r.get('first_error', '')}")
        hs = r["handshakes"]
        return {"units": r["requests"], "cps": r["requests_per_s"], "p50_ms": r["p50_us"] / 1000,
                "p99_ms": r["p99_us"] / 1000, "errors": r["errors"],
                "resumed_pct": 100 * hs.get("resumed", 0) / max(sum(hs.values()), 1), "raw": r}

    def notes(self, res):
        # what the client saw, so the table proves full vs resumed handshakes
        seen: dict = {}
        for m in res.get("rounds", []):
            raw = m.get("raw", {})
            d = seen.setdefault(m["proxy"], [Counter(), Counter()])
            d[0].update(raw.get("handshakes", {}))
            d[1].update(raw.get("suites", {}))
        if not seen:
            return []
        parts = [f"{p}: " + ", ".join(f"{k} {v}" for k, v in sorted(hs.items())) + " ("
                 + ", ".join(sorted(su)) + ")" for p, (hs, su) in seen.items()]
        return ["Handshakes in the measured runs, as the client saw them: " + "; ".join(parts) + "."]


class HttpsConn(HttpsConns):
    name, title = "https-conn", "https-conn"


class HttpsResume(HttpsConns):
    name, title = "https-resume", "https-resume"
    resume = True


# --------------------------------------------------------------------------
# HTTP/2 from clients: h2load, cleartext h2 with prior knowledge (h2c);
# the upstreams stay HTTP/1.1 as in http-small


_H2_TIME = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def _h2_ms(v: str) -> float:
    m = re.fullmatch(r"([0-9.]+)(us|ms|s)", v)
    if not m:
        raise BenchError(f"h2load: unexpected time {v!r}")
    return float(m.group(1)) * _H2_TIME[m.group(2)]


def parse_h2load(out: str) -> dict:
    """h2load's summary: protocol, counts, status classes, data bytes, and the
    "time for request" min/max/mean/sd (it gives no percentiles)."""
    r: dict = {}
    m = re.search(r"^Application protocol: (\S+)", out, re.M)
    r["protocol"] = m.group(1) if m else None
    m = re.search(r"^finished in ([0-9.]+)(us|ms|s),", out, re.M)
    if not m:
        raise BenchError(f"h2load: no summary: {out.strip()[-200:]!r}")
    r["seconds"] = _h2_ms(m.group(1) + m.group(2)) / 1000
    m = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", out, re.M)
    if not m:
        raise BenchError(f"h2load: no requests line: {out.strip()[-200:]!r}")
    for k, g in zip(("total", "started", "done", "succeeded", "failed", "errored", "timeout"), m.groups()):
        r[k] = int(g)
    m = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out, re.M)
    r["status"] = dict(zip(("2xx", "3xx", "4xx", "5xx"), map(int, m.groups()))) if m else {}
    m = re.search(r"\((\d+)\) data", out)
    r["data_bytes"] = int(m.group(1)) if m else None
    m = re.search(r"^time for request:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", out, re.M)
    if m:
        r.update(zip(("min_ms", "max_ms", "mean_ms", "sd_ms"), map(_h2_ms, m.groups())))
    return r


def run_h2load(url: str, args: list, timeout: float) -> dict:
    argv = ["h2load"] + [str(a) for a in args] + [url]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise BenchError("h2load not found (apt-get install nghttp2-client)") from None
    except subprocess.TimeoutExpired:
        raise BenchError(f"h2load did not finish within {timeout:.0f}s") from None
    r = parse_h2load(p.stdout)
    if r["protocol"] != "h2c":
        raise BenchError(f"h2load negotiated {r['protocol']!r}, not h2c: {(p.stderr or p.stdout).strip()[-200:]}")
    return r


class H2Scenario(HttpScenario):
    """The proxies serve HTTP/2 from clients in cleartext with prior knowledge (h2c:
    the connection opens with the HTTP/2 preface; weir on its ordinary http listener,
    HAProxy `bind ... proto h2`, nginx `listen ... http2`), HTTP/1.1 with keep-alive
    to the same two nginx upstreams as http-small. Load: h2load, CONNS connections
    × STREAMS concurrent streams each."""
    protocol, scheme = "h2c", "http"
    goal = (0.8, ("haproxy", "nginx"), False)
    streams = 10

    def variants(self):
        return [Variant("weir", "weir", 1), Variant("haproxy", "haproxy"), Variant("nginx", "nginx")]

    @property
    def columns(self):
        return ([Column("req/s", "rps"), Column("mean ms", "mean_ms", "{:.2f}"),
                 Column("sd ms", "sd_ms", "{:.2f}"), Column("max ms", "max_ms", "{:.1f}")]
                + cpu_columns(self) + [Column("errors", "errors", "{:.0f}", ratio=False)])

    def h2load_args(self, conns: int, streams: int) -> list:
        return ["-c", conns, "-m", streams, "-t", max(1, min(self.opts["wrk_threads"], conns))]

    def check(self, ctx):
        # both upstreams, twice, on one h2c connection: 4 × 200 and 4 × body_len bytes of data
        url = f"{self.scheme}://{HOST}:{ctx.proxy_port}{self.path}"
        r = run_h2load(url, ["-n", 4, "-c", 1, "-m", 1], 30)
        if r["succeeded"] != 4 or r["status"].get("2xx") != 4 or r["data_bytes"] != 4 * self.body_len:
            raise BenchError(f"h2c GET {self.path} through the proxy: {r['succeeded']} of 4 succeeded, "
                             f"status {r['status']}, {r['data_bytes']} data bytes (want {4 * self.body_len})")

    def load(self, ctx, seconds, warmup=False):
        url = f"{self.scheme}://{HOST}:{ctx.proxy_port}{self.path}"
        r = run_h2load(url, self.h2load_args(self.conns, self.streams) + ["-D", seconds], seconds + 30)
        if r["succeeded"] == 0:
            raise BenchError(f"no request succeeded ({r['failed']} failed, {r['errored']} errored)")
        return {"units": r["succeeded"], "rps": r["succeeded"] / r["seconds"], "mean_ms": r.get("mean_ms"),
                "sd_ms": r.get("sd_ms"), "max_ms": r.get("max_ms"), "errors": r["failed"] + r["timeout"],
                "raw": r}

    def notes(self, res):
        # what h2load saw, so the table proves h2c and counts the failures
        seen: dict = {}
        for m in res.get("rounds", []):
            raw = m.get("raw", {})
            c, protos = seen.setdefault(m["proxy"], (Counter(), Counter()))
            c.update({k: raw.get(k, 0) for k in ("succeeded", "failed", "errored", "timeout")})
            protos[str(raw.get("protocol"))] += 1
        if not seen:
            return []
        parts = [f"{p}: " + ", ".join(f"{k} {v}" for k, v in c.items()) + " ("
                 + ", ".join(f"{n} run(s) {proto}" for proto, n in sorted(protos.items())) + ")"
                 for p, (c, protos) in seen.items()]
        return ["h2load in the measured runs, summed over rounds: " + "; ".join(parts)
                + ". Latency columns: h2load's \"time for request\" (mean, sd, max); it gives no percentiles."]


class H2Small(H2Scenario):
    name, title = "h2-small", "h2-small"

    def describe(self):
        return (f"{self.title}: {self.body_len} B responses, `GET {self.path}`, h2load "
                f"-c {self.conns} -m {self.streams} -t {max(1, min(self.opts['wrk_threads'], self.conns))}: "
                f"{self.conns} h2c connections (prior knowledge) × {self.streams} concurrent streams; "
                f"the proxies speak HTTP/1.1 with keep-alive to the two nginx upstreams")


# --------------------------------------------------------------------------
# gRPC: ghz unary calls over h2c, h2c to two grpc-upstream backends


class GrpcUnary(Scenario):
    """gRPC end to end over HTTP/2: ghz calls `weir.test.Echo/Unary` with a small
    message over CONNS h2c connections × STREAMS calls in flight each; the proxies
    relay to two grpc-upstream backends (weir-testkit) over h2c: weir with
    `protocol = "h2c"` on its pool, HAProxy `server ... proto h2`, nginx `grpc_pass`.
    The check proves a relay, not just a 200: four calls, each echoed, and both
    backends named in the replies."""
    name, title, protocol = "grpc-unary", "grpc-unary", "grpc"
    unit = "call"
    cpu_unit = "µs/call"
    goal = (0.8, ("haproxy", "nginx"), False)
    conns, streams = 50, 10
    call = "weir.test.Echo/Unary"
    data = {"message": "hi"}

    def variants(self):
        return [Variant("weir", "weir", 1), Variant("haproxy", "haproxy"), Variant("nginx", "nginx")]

    @property
    def columns(self):
        return ([Column("calls/s", "rps"), Column("p50 ms", "p50_ms", "{:.2f}"), Column("p90 ms", "p90_ms", "{:.2f}"),
                 Column("p99 ms", "p99_ms", "{:.2f}")]
                + cpu_columns(self) + [Column("errors", "errors", "{:.0f}", ratio=False)])

    def describe(self):
        return (f"{self.title}: ghz, `{self.call}` with {json.dumps(self.data)}, {self.conns} h2c connections "
                f"(prior knowledge) × {self.streams} calls in flight each; the proxies speak h2c to two "
                f"grpc-upstream backends")

    def start_upstreams(self, ctx):
        return [start_grpc_upstream(ctx, i) for i in (1, 2)]

    def start(self, ctx, v, upstreams, tag):
        try:
            return super().start(ctx, v, upstreams, tag)
        except BenchError as e:
            if v.is_weir:  # say which config, then weir's own error (not its log prefix and path)
                why = str(e)
                why = why[why.find("error: "):] if "error: " in why else why
                raise BenchError(f'weir with configs/weir-grpc.toml (pool protocol = "h2c") did not start: '
                                 f'{why}') from None
            raise

    def target(self, ctx) -> str:
        return f"{HOST}:{ctx.proxy_port}"

    def check(self, ctx):
        debug = ctx.out / "raw" / "grpc-check-debug.log"
        debug.unlink(missing_ok=True)
        r = ghz.summary(ghz.run(self.target(ctx), self.call, self.data,
                                ["-n", 4, "-c", 1, "--connections", 1], 60, debug))
        got = ghz.replies(debug)
        servers = sorted({g.get("server", "?") for g in got})
        if r["ok"] != 4 or len(got) != 4 or any(g.get("message") != self.data["message"] for g in got) \
                or servers != ["u1", "u2"]:
            kinds = "; ".join(f"{k} ×{n}" for k, n in list(r["error_kinds"].items())[:3])
            raise BenchError(f"4 unary calls through the proxy: {r['ok']} OK, status codes {r['codes']}, "
                             f"replies from {servers or 'no backend'} (want u1 and u2)"
                             + (f"; errors: {kinds}" if kinds else ""))

    def load(self, ctx, seconds, warmup=False):
        # --duration-stop wait: calls in flight at the end finish and count, so the
        # proxy's CPU is divided by every call it relayed, and none becomes an error.
        r = ghz.summary(ghz.run(self.target(ctx), self.call, self.data,
                                ["-z", f"{seconds}s", "--duration-stop", "wait", "--connections", self.conns,
                                 "-c", self.conns * self.streams, "--timeout", "10s"], seconds + 60))
        if r["ok"] == 0:
            raise BenchError(f"no call succeeded ({r['errors']} failed: {r['error_kinds'] or r['codes']})")
        return {"units": r["ok"], "rps": r["ok"] / r["seconds"], "p50_ms": r["p50_ms"], "p90_ms": r["p90_ms"],
                "p99_ms": r["p99_ms"], "errors": r["errors"], "raw": r}

    def notes(self, res):
        lines = []
        seen: dict = {}
        for m in res.get("rounds", []):
            raw = m.get("raw", {})
            codes, kinds = seen.setdefault(m["proxy"], (Counter(), Counter()))
            codes.update(raw.get("codes", {}))
            kinds.update(raw.get("error_kinds", {}))
        if seen:
            parts = []
            for p, (codes, kinds) in seen.items():
                part = f"{p}: " + ", ".join(f"{k} {v}" for k, v in sorted(codes.items()))
                if kinds:
                    part += " (" + "; ".join(f"{k[:80]} ×{v}" for k, v in kinds.most_common(2)) + ")"
                parts.append(part)
            lines.append("ghz status codes in the measured runs, summed over rounds: " + "; ".join(parts)
                         + ". Latency: ghz's percentiles of every call, errors included.")
        med = res.get("medians", {})
        peers = [p for p in ("haproxy", "nginx") if med.get(p, {}).get("cpu_total")]
        if peers and med.get("weir", {}).get("cpu_total"):
            best = min(peers, key=lambda p: med[p]["cpu_total"])
            w, b = med["weir"], med[best]
            user = f"{w['cpu_user'] / b['cpu_user']:.2f}" if w.get("cpu_user") and b.get("cpu_user") else "–"
            lines.append(f"weir ÷ the better peer ({best}): CPU/call total {w['cpu_total'] / b['cpu_total']:.2f}, "
                         f"user {user}.")
        return lines


# --------------------------------------------------------------------------
# TCP via weir-bench


def run_bench(ctx: Ctx, args: list[str], timeout: float) -> dict:
    argv = [str(ctx.bin("weir-bench"))] + [str(a) for a in args]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"weir-bench {args[0]} did not finish within {timeout:.0f}s") from None
    if r.returncode != 0:
        raise BenchError(f"weir-bench {args[0]}: {r.stderr.strip()[-200:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


class TcpStream(Scenario):
    name, title, protocol = "tcp-stream", "tcp-stream", "tcp"
    unit, cpu_scale, cpu_unit = "GiB", 1e6, "CPU s/GiB"
    goal = (1.0, ("haproxy",), False)

    def variants(self):
        return [Variant("weir", "weir", 1), Variant("weir-2t", "weir", 2), Variant("haproxy", "haproxy", splice="force"),
                Variant("haproxy-nosplice", "haproxy", splice="off"), Variant("nginx", "nginx")]

    @property
    def columns(self):
        return [Column("MiB/s", "mib_s")] + cpu_columns(self)

    def describe(self):
        gib = self.opts["tcp_bytes"] / (1 << 30)
        return (f"tcp-stream: {gib:g} GiB pushed through one connection to a sink, "
                f"{self.opts['tcp_streams']} such connection(s) one after the other per measured run "
                f"(haproxy: option splice-request + splice-response; haproxy-nosplice: no splice)")

    def start_upstreams(self, ctx):
        return [start_bench_upstream(ctx, 1, "sink")]

    def check(self, ctx):
        run_bench(ctx, ["stream", "--connect", f"{HOST}:{ctx.proxy_port}", "--bytes", 1 << 20,
                        "--timeout", 10], 20)

    def load(self, ctx, seconds, warmup=False):
        # BENCH_TCP_STREAMS connections one after the other, each pushing BENCH_TCP_BYTES:
        # more work per measured window, so the 10 ms CPU tick matters less.
        n = 64 << 20 if warmup else self.opts["tcp_bytes"]
        runs = [run_bench(ctx, ["stream", "--connect", f"{HOST}:{ctx.proxy_port}", "--bytes", n,
                                "--timeout", 240], 260)
                for _ in range(1 if warmup else self.opts["tcp_streams"])]
        secs = sum(r["seconds"] for r in runs)
        total = n * len(runs)
        return {"units": total / (1 << 30), "mib_s": total / (1 << 20) / secs, "seconds": secs, "streams": runs}


class TcpConn(Scenario):
    name, title, protocol = "tcp-conn", "tcp-conn", "tcp"
    unit, cpu_unit = "conn", "µs/conn"
    conns, payload = 50, 64
    goal = (1.0, ("haproxy", "nginx"), False)

    @property
    def columns(self):
        return ([Column("conn/s", "cps"), Column("p50 ms", "p50_ms", "{:.2f}"), Column("p99 ms", "p99_ms", "{:.2f}")]
                + cpu_columns(self) + [Column("errors", "errors", "{:.0f}", ratio=False)])

    def variants(self):
        # small payloads: splice-auto, i.e. HAProxy splices only when it pays
        return [Variant("weir", "weir", 1), Variant("weir-2t", "weir", 2),
                Variant("haproxy", "haproxy", splice="auto"), Variant("nginx", "nginx")]

    def describe(self):
        return (f"tcp-conn: {self.conns} concurrent loops of connect, send {self.payload} B, read the echo, "
                f"close (weir-bench conns)")

    def start_upstreams(self, ctx):
        return [start_bench_upstream(ctx, 1, "echo")]

    def check(self, ctx):
        r = run_bench(ctx, ["conns", "--connect", f"{HOST}:{ctx.proxy_port}", "--concurrency", 2,
                            "--duration", 0.2, "--payload", self.payload], 20)
        if r["errors"] or not r["connections"]:
            raise BenchError(f"echo through the proxy failed: {r.get('first_error', r)}")

    def load(self, ctx, seconds, warmup=False):
        r = run_bench(ctx, ["conns", "--connect", f"{HOST}:{ctx.proxy_port}", "--concurrency", self.conns,
                            "--duration", seconds, "--payload", self.payload, "--threads",
                            self.opts["wrk_threads"]], seconds + 30)
        if not r["connections"]:
            raise BenchError(f"no connection completed: {r.get('first_error', '')}")
        return {"units": r["connections"], "cps": r["conns_per_s"], "p50_ms": r["p50_us"] / 1000,
                "p99_ms": r["p99_us"] / 1000, "errors": r["errors"], "raw": r}


def cpu_columns(sc: Scenario) -> list[Column]:
    f = "{:.2f}" if sc.cpu_scale > 1 else "{:.1f}"
    u = sc.cpu_unit if sc.cpu_scale > 1 else f"CPU {sc.cpu_unit}"
    return [Column(f"{u} user", "cpu_user", f), Column("sys", "cpu_sys", f), Column("total", "cpu_total", f),
            Column(f"syscalls/{sc.unit}", "syscalls_per_unit", "{:.1f}" if sc.cpu_scale == 1 else "{:.0f}"),
            Column("peak RSS MiB", "rss_mib", "{:.1f}", ratio=False)]


# --------------------------------------------------------------------------
# capacity and resilience: fake upstreams, `weir-bench paced` clients


def env_float(name: str, default: float) -> float:
    v = os.environ.get(name, "").strip()
    return float(v) if v else default


# After a failed request a paced client waits this long before its next one: a proxy
# that answers 502 in microseconds must not turn one outage into 100k "failures".
FAIL_PAUSE_MS = 50


def run_paced(ctx: Ctx, clients: int, seconds: float, method: str = "GET", body: int = 0,
              pace: str = "0", timeout: float = 10.0) -> dict:
    """`weir-bench paced` through the proxy; POSTs go to /echo and must come back byte-exact."""
    path = "/echo" if body else "/"
    args = ["paced", "--connect", f"{HOST}:{ctx.proxy_port}", "--clients", clients, "--method", method,
            "--path", path, "--body-size", body, "--pace", pace, "--duration", seconds,
            "--timeout", timeout, "--fail-pause", FAIL_PAUSE_MS]
    if body:
        args.append("--check-echo")
    r = run_bench(ctx, args, seconds + timeout + 30)
    r["non2xx"] = sum(v for k, v in r["kinds"].items() if k.startswith("status "))
    r["transport"] = r["failed"] - r["non2xx"]
    return r


def http_exchange(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    c = http.client.HTTPConnection(HOST, port, timeout=5)
    try:
        c.request(method, path, body=body)
        r = c.getresponse()
        return r.status, r.read()
    except (OSError, http.client.HTTPException) as e:
        raise BenchError(f"{method} {path} through the proxy failed: {e!r}") from None
    finally:
        c.close()


def check_get_and_post(ctx: Ctx) -> None:
    for _ in range(3):
        status, body = http_exchange(ctx.proxy_port, "GET", "/")
        if status != 200 or not body:
            raise BenchError(f"GET / through the proxy: status {status}, body {body[:80]!r}")
        sent = b"check " + os.urandom(8).hex().encode()
        status, body = http_exchange(ctx.proxy_port, "POST", "/echo", sent)
        if status != 200 or body != sent:
            raise BenchError(f"POST /echo through the proxy: status {status}, body {body[:80]!r} (want {sent!r})")


def log_reasons(log: Path, offset: int) -> dict:
    """weir's `request failed ... reason=X` lines written since `offset`, counted by reason."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except OSError:
        return {}
    c = Counter()
    for line in text.splitlines():
        if "request failed" in line:
            m = re.search(r'reason="?(\w+)', line)
            d = re.search(r"request failed: (.*?) listener=", line)
            c[(m.group(1) if m else "?") + (f" ({d.group(1)})" if d else "")] += 1
    return dict(c)


def nginx_errors(log: Path, offset: int) -> dict:
    """nginx error-log messages since `offset`, counted by message (client/upstream details cut)."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except OSError:
        return {}
    c = Counter()
    for line in text.splitlines():
        m = re.search(r"\[(error|warn)\] \d+#\d+: (?:\*\d+ )?(.*?)(?:, client: |$)", line)
        if m:
            msg = re.sub(r"\d+\.\d+\.\d+\.\d+:\d+", "ADDR", m.group(2))
            msg = re.sub(r"\(\d+: ", "(", msg)
            c[f"{m.group(1)}: {msg}"] += 1
    return dict(c)


def file_size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def wait_upstreams_up(ups: list[Upstream], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    for u in ups:
        while not port_open(HOST, u.port):
            if u.proc is not None and not u.proc.alive():
                raise BenchError(f"upstream {u.addr}: {u.proc.why_dead()}")
            if time.monotonic() > deadline:
                raise BenchError(f"upstream {u.addr} did not come back within {timeout:.0f}s")
            time.sleep(0.05)


def upstream_duplicates(ups: list[Upstream]) -> int:
    """Requests that reached a fake upstream's application a second time, summed over
    `ups`: weir-bench paced sends a unique X-Request-Id, fake-upstream counts repeats
    (GET /__ids). Counted at the backends, not in any proxy's own counters."""
    total = 0
    for u in ups:
        c = http.client.HTTPConnection(HOST, u.port, timeout=5)
        try:
            c.request("GET", "/__ids")
            total += json.loads(c.getresponse().read())["duplicates"]
        except (OSError, ValueError, KeyError) as e:
            raise BenchError(f"upstream {u.addr}: /__ids: {e}") from None
        finally:
            c.close()
    return total


class Disturber:
    """Sends restart signals to fake upstreams on a schedule while the load runs:
    `plan` is a list of (seconds after start, upstream, signal)."""

    def __init__(self, plan: list[tuple[float, Upstream, int]]):
        self.plan = plan
        self.sent = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        t0 = time.monotonic()
        for at, up, sig in self.plan:
            if self._stop.wait(max(0.0, t0 + at - time.monotonic())):
                return
            if up.proc is not None and up.proc.alive():
                os.kill(up.proc.pid, sig)
                self.sent += 1

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        return False


class PacedScenario(Scenario):
    """Shared by capacity and resilience: fake upstreams, weir-bench paced load,
    one round by default, no syscall pass, weir's failure reasons from its log."""
    syscall_pass = False
    own_timing = True
    seconds_env, seconds_default = "BENCH_RESILIENCE_SECONDS", 12

    def run_seconds(self):
        return env_float(self.seconds_env, 5 if self.opts["quick"] else self.seconds_default)

    def rounds(self):
        return self.opts["rounds"] if self.opts.get("rounds_set") else 1

    def start(self, ctx, v, upstreams, tag):
        p = self.start_variant(ctx, v, upstreams, tag)
        self._running = (v, p, ctx)
        return p

    def start_variant(self, ctx, v, upstreams, tag) -> Proc:
        raise NotImplementedError

    def _log_offsets(self):
        v, p, ctx = self._running
        nginx_log = ctx.run / f"{p.name}.error.log"
        return p.log, file_size(p.log), nginx_log, file_size(nginx_log)

    def _log_findings(self, offsets) -> dict:
        v, _p, _ctx = self._running
        log, off, nginx_log, noff = offsets
        if v.kind == "weir":
            return {"weir_reasons": log_reasons(log, off)}
        if v.kind == "nginx":
            return {"nginx_errors": nginx_errors(nginx_log, noff)}
        return {}

    def check(self, ctx):
        check_get_and_post(ctx)

    def notes(self, res):
        out = []
        for pname in res.get("variants", []):
            rows = [m for m in res.get("rounds", []) if m["proxy"] == pname]
            kinds, reasons, nerr = Counter(), Counter(), Counter()
            for m in rows:
                kinds.update(m.get("kinds", {}))
                reasons.update(m.get("weir_reasons", {}))
                nerr.update(m.get("nginx_errors", {}))
            if not kinds and not reasons:
                continue
            parts = [f"{k} × {n}" for k, n in kinds.most_common()]
            line = f"- {pname}: " + "; ".join(parts)
            if reasons:
                line += " — weir's log: " + ", ".join(f"reason={k} × {n}" for k, n in reasons.most_common())
            if nerr:
                line += " — nginx's error log: " + "; ".join(f"{k} × {n}" for k, n in nerr.most_common(3))
            out.append(line)
        if out:
            out.insert(0, "Failures (client-side kinds; the proxy's own log where it says why):")
            out.insert(1, "")
        return out


# -- capacity: every backend worker kept busy, none queued behind a busy one


class Capacity(PacedScenario):
    """6 backends × 2 workers, exponential service time (mean 20 ms), 12 keep-alive
    clients POSTing back to back: with a per-server cap of 2 the balancer keeps every
    worker busy without queueing behind a busy one."""
    name, title = "capacity", "capacity"
    seconds_env, seconds_default = "BENCH_CAPACITY_SECONDS", 20
    n_up, workers, mean_ms, clients, body = 6, 2, 20, 12, 64

    @property
    def ideal(self) -> float:
        return self.n_up * self.workers / (self.mean_ms / 1000)

    columns = [Column("req/s", "rps"), Column("% of ideal", "share", "{:.1f}"),
               Column("p50 ms", "p50_ms", "{:.1f}"), Column("p99 ms", "p99_ms", "{:.1f}"),
               Column("CPU µs/req", "cpu_total", "{:.0f}"),
               Column("errors", "failed", "{:.0f}", ratio=False, agg="sum")]

    def variants(self):
        return [Variant("weir", "weir", params={"cap": True}), Variant("haproxy", "haproxy", params={"cap": True}),
                Variant("weir-nocap", "weir", params={"cap": False}),
                Variant("haproxy-nocap", "haproxy", params={"cap": False})]

    def describe(self):
        return (f"capacity: {self.n_up} fake upstreams × {self.workers} workers (`--max-concurrency "
                f"{self.workers}`), exponential service time mean {self.mean_ms} ms; {self.clients} keep-alive "
                f"clients POSTing {self.body} B back to back (weir-bench paced) for {self.run_seconds():g} s, "
                f"{self.rounds()} round(s); round robin. `weir`: `max_conn = {self.workers}`, `max_queue = 10000`, "
                f"`queue_timeout = \"30s\"`; `haproxy`: `maxconn {self.workers}` per server, `timeout queue 30s`; "
                f"`-nocap`: no per-server limit. Ideal = {self.n_up} × {self.workers} / "
                f"{self.mean_ms / 1000:g} s = {self.ideal:.0f} req/s.")

    def start_upstreams(self, ctx):
        return [start_fake_upstream(ctx, i, ["--latency", f"exp:{self.mean_ms}ms", "--max-concurrency",
                                             str(self.workers)]) for i in range(1, self.n_up + 1)]

    def start_variant(self, ctx, v, upstreams, tag):
        if not v.params["cap"]:
            return start_proxy(ctx, v, "http", upstreams, tag)
        ups = [u.with_opts(haproxy=f"maxconn {self.workers}") for u in upstreams]
        return start_proxy(ctx, v, "http", ups, tag,
                           pool_extra=f'max_conn = {self.workers}\nmax_queue = 10000\nqueue_timeout = "30s"',
                           haproxy_backend="    timeout queue 30s")

    def calibrate(self, ctx, upstreams):
        # Perfect balancing without any proxy: each upstream driven directly by as many
        # clients as it has workers, all at once, for a run's duration. What the upstreams
        # really deliver here (sleep timers round up, the machine is shared), so the proxies'
        # share of the nominal ideal can be read against it.
        secs = self.run_seconds()
        argv = [str(ctx.bin("weir-bench")), "paced", "--clients", str(self.workers), "--method", "POST",
                "--path", "/echo", "--body-size", str(self.body), "--check-echo", "--duration", str(secs)]
        procs = []
        try:
            for u in upstreams:
                procs.append(subprocess.Popen(argv + ["--connect", u.addr], stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True))
            outs = [p.communicate(timeout=secs + 30) for p in procs]
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BenchError(f"direct run: {e}") from None
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        runs = []
        for p, (out, err) in zip(procs, outs):
            if p.returncode != 0 or not out.strip():
                raise BenchError(f"direct run: weir-bench paced: {err.strip()[-200:]}")
            runs.append(json.loads(out.strip().splitlines()[-1]))
        rps = sum(r["ok"] / r["seconds"] for r in runs)
        return {"seconds": secs, "rps": rps, "share": 100 * rps / self.ideal,
                "mean_ms": self.n_up * self.workers / rps * 1000 if rps else None,
                "failed": sum(r["failed"] for r in runs),
                "summary": f"no proxy, {self.workers} clients straight to each upstream: {rps:.0f} req/s "
                           f"= {100 * rps / self.ideal:.1f} % of ideal"}

    def notes(self, res):
        out = super().notes(res)
        cal = res.get("calibration")
        if cal and cal.get("rps"):
            out.append(f"Reference without a proxy (perfect balancing): {self.workers} keep-alive clients "
                       f"straight to each of the {self.n_up} upstreams, all at once, for {cal['seconds']:g} s: "
                       f"{cal['rps']:.0f} req/s = **{cal['share']:.1f} % of ideal** (an effective "
                       f"{cal['mean_ms']:.1f} ms per request and worker instead of {self.mean_ms}: timer rounding, "
                       f"client round trips, the shared machine). Note that the exponential service time "
                       f"makes any single run's figure noisy by about ±1–2 %.")
            med = res.get("medians", {})
            rel = [f"{n} {100 * med[n]['rps'] / cal['rps']:.1f} %" for n in ("weir", "haproxy")
                   if med.get(n, {}).get("rps")]
            if rel:
                out.append(f"With max_conn, against that reference: {', '.join(rel)}.")
        elif cal and cal.get("error"):
            out.append(f"Calibration failed: {cal['error']}")
        return out

    def load(self, ctx, seconds, warmup=False):
        offs = self._log_offsets()
        r = run_paced(ctx, self.clients, seconds, "POST", self.body)
        if not r["ok"]:
            raise BenchError(f"no request completed: {r['samples'][:2]}")
        rps = r["ok"] / r["seconds"]
        m = {"units": r["ok"], "rps": rps, "share": 100 * rps / self.ideal, "p50_ms": r["p50_us"] / 1000,
             "p99_ms": r["p99_us"] / 1000, "failed": r["failed"], "kinds": r["kinds"], "paced": r}
        m.update(self._log_findings(offs))
        return m

    def goal_line(self, med):
        w, h = med.get("weir"), med.get("haproxy")
        if not w:
            return None
        ok = w["share"] >= 93 and (not h or w["share"] >= h["share"])
        got = f"weir {w['share']:.1f} %" + (f", haproxy {h['share']:.1f} %" if h else "")
        return (f"Goal: with max_conn ≥ 93 % of ideal and ≥ HAProxy's share: "
                f"{'**met**' if ok else 'not met'} ({got}).")


# -- resilience: a backend's hiccup never becomes a client error


WEIR_HEALTH = '[pools.app.health]\ncheck = "tcp"\ninterval = "500ms"\ntimeout = "250ms"\nrise = 2\nfall = 2'


class Resilience(PacedScenario):
    """Base of the resilience scenarios: every proxy with active health checks and retries
    (weir: its default retries; HAProxy: retries 3, option redispatch, retry-on
    all-retryable-errors for GET; nginx: its defaults), failures counted per row."""
    methods = ("GET", "POST")
    n_up, clients, pace, body = 2, 20, "0", 32
    up_args: list[str] = ["--latency", "fixed:1ms"]

    columns = [Column("requests", "requests", agg="sum", ratio=False),
               Column("ok/s", "ok_s", ratio=False),
               Column("failed", "failed", agg="sum", ratio=False),
               Column("non-2xx", "non2xx", agg="sum", ratio=False),
               Column("transport errors", "transport", agg="sum", ratio=False),
               Column("p50 ms", "p50_ms", "{:.2f}", ratio=False),
               Column("p99 ms", "p99_ms", "{:.2f}", ratio=False),
               Column("duplicates", "dups", agg="sum", ratio=False),
               Column("restarts", "restarts", agg="sum", ratio=False)]
    hidden = [Column("", "resets", agg="sum", ratio=False)]  # aggregated, not shown

    def variants(self):
        return [Variant(f"{k} {m}", k, params={"method": m}) for m in self.methods
                for k in ("weir", "haproxy", "nginx")]

    def proxies_note(self) -> str:
        return ("weir: `[pools.app.health] check = \"tcp\"`, interval 500ms, timeout 250ms, rise 2, fall 2, "
                "default retries (2 attempts; a try the backend provably did not read, i.e. a failed "
                "connect, a pooled connection found closed before writing, or a reset before any "
                "response byte, is retried for any method); HAProxy: `check inter 500ms rise 2 "
                "fall 2`, `timeout check 250ms`, `retries 3`, `option redispatch`, and for GET "
                "`retry-on all-retryable-errors` (POST: the default `retry-on conn-failure`); nginx: "
                "defaults (`proxy_next_upstream error timeout`, `max_fails=1 fail_timeout=10s`, no "
                "retry of a POST once it was sent: `non_idempotent` is off)")

    def start_upstreams(self, ctx):
        return [start_fake_upstream(ctx, i, self.up_args) for i in range(1, self.n_up + 1)]

    def start_variant(self, ctx, v, upstreams, tag):
        ups = [u.with_opts(haproxy="check inter 500ms rise 2 fall 2") for u in upstreams]
        hb = ["    retries 3", "    option redispatch", "    timeout check 250ms"]
        if v.params["method"] == "GET":
            hb.append("    retry-on all-retryable-errors")
        health = WEIR_HEALTH
        if "eject_after" in v.params:
            health += f"\neject_after = {v.params['eject_after']}"
        return start_proxy(ctx, v, "http", ups, tag, pool_extra=health, haproxy_backend="\n".join(hb))

    def plan(self, upstreams: list[Upstream], seconds: float) -> list[tuple[float, Upstream, int]]:
        return []

    def load(self, ctx, seconds, warmup=False):
        method = self._running[0].params["method"]
        body = self.body if method == "POST" else 0
        if warmup:
            r = run_paced(ctx, self.clients, seconds, method, body, self.pace)
            return {"units": max(r["ok"], 1)}
        offs = self._log_offsets()
        ups = self._upstreams
        dups_before = upstream_duplicates(ups)
        with Disturber(self.plan(ups, seconds)) as d:
            r = run_paced(ctx, self.clients, seconds, method, body, self.pace)
        wait_upstreams_up(ups)
        m = {"units": max(r["ok"], 1), "requests": r["requests"], "ok_s": r["ok"] / r["seconds"],
             "dups": upstream_duplicates(ups) - dups_before,
             "failed": r["failed"], "non2xx": r["non2xx"], "transport": r["transport"],
             "p50_ms": r["p50_us"] / 1000, "p99_ms": r["p99_us"] / 1000, "restarts": d.sent,
             "kinds": r["kinds"], "samples": r["samples"], "paced": r,
             "resets": r["kinds"].get("status 502 upstream_reset", 0) if method == "POST" else 0}
        m.update(self._log_findings(offs))
        return m

    def start(self, ctx, v, upstreams, tag):
        self._upstreams = upstreams
        return super().start(ctx, v, upstreams, tag)

    def notes(self, res):
        out = super().notes(res)
        posts = [m for m in res.get("rounds", []) if m["proxy"].startswith("weir") and m["proxy"].endswith(" POST")]
        if any(k.startswith("upstream_reset") for m in posts for k in m.get("weir_reasons", {})):
            out += ["", "weir's POST `upstream_reset` 502s are the failures its retry rule accepts rather than a "
                        "duplicate: a POST that went out and whose connection was then closed cleanly before any "
                        "answer may have been acted on, so it is not sent again (a retry could apply it twice)."]
        if any(m["proxy"].startswith("haproxy") and any(k.startswith("closed before any response byte")
                                                        for k in m.get("kinds", {}))
               for m in res.get("rounds", [])):
            out += ["", "HAProxy's transport errors: when a request it cannot retry fails on the server side, "
                        "HAProxy closes the client's keep-alive connection without an answer (so that a client "
                        "may retry it itself); weir-bench counts that as a failure and does not resend."]
        if any(m["proxy"].startswith("nginx") and any("no live upstreams" in k for k in m.get("nginx_errors", {}))
               for m in res.get("rounds", [])):
            out += ["", "nginx's `no live upstreams` 502s: with its defaults (`max_fails=1 fail_timeout=10s`) each "
                        "failed try marks a server down for 10 s; once every server is marked down, nginx answers "
                        "502 without trying any (clients pause 50 ms after each failure, so the count is bounded)."]
        return out

    def goal_line(self, med):
        rows = [(n, m) for n, m in med.items() if n.startswith("weir ")]
        if not rows:
            return None
        bad = []
        for n, m in rows:
            if m.get("failed"):
                resets = m.get("resets", 0)
                why = (f", all of them POST upstream_reset (a POST the backend may have read is never sent "
                       f"again)" if resets == m["failed"]
                       else f", {resets:.0f} of them POST upstream_reset" if resets else "")
                bad.append(f"{n}: {m['failed']:.0f} failed{why}")
        # GETs may be sent twice by design (idempotent); a POST never.
        dups = [f"{n}: {m['dups']:.0f}" for n, m in med.items() if n.endswith(" POST") and m.get("dups")]
        nginx_post = med.get("nginx POST", {}).get("failed")
        weir_post = med.get("weir POST", {}).get("failed")
        vs = (f"; POST failures weir {weir_post:.0f} vs nginx {nginx_post:.0f}"
              if weir_post is not None and nginx_post is not None else "")
        return (f"Goal: 0 failed and 0 non-2xx through weir: "
                f"{'**met**' if not bad else 'not met (' + '; '.join(bad) + ')'}. "
                f"Goal: no POST reaches a backend twice (counted at the backends by request id): "
                f"{'**met**' if not dups else 'not met (' + ', '.join(dups) + ')'}{vs}.")


class ResilienceFlap(Resilience):
    name, title = "resilience-flap", "resilience-flap"

    def variants(self):
        # weir-noeject: passive ejection off (eject_after = 0), so the flapping endpoint stays
        # in rotation between its outages and only the retry rules stand between it and the
        # clients (weir's defaults eject it for 10 s, then 20 s, after its first outage).
        out = []
        for m in self.methods:
            out += [Variant(f"{k} {m}", k, params={"method": m}) for k in ("weir", "haproxy", "nginx")]
            out.append(Variant(f"weir-noeject {m}", "weir", params={"method": m, "eject_after": 0}))
        return out

    def describe(self):
        return (f"resilience-flap: {self.n_up} fake upstreams (1 ms), the second one stops and "
                f"drops all its connections (SIGUSR1) every 2 s from t = 1 s and listens again 0.5 s later; "
                f"{self.clients} keep-alive clients back to back (POST: {self.body} B to /echo, checked) for "
                f"{self.run_seconds():g} s, {self.rounds()} round(s). {self.proxies_note()}. `weir-noeject`: "
                f"weir with passive ejection off (`eject_after = 0`), so the flapping endpoint stays in "
                f"rotation between outages and only the retry rules protect the clients.")

    def plan(self, ups, seconds):
        out, t = [], 1.0
        while t <= seconds - 0.6:
            out.append((t, ups[1], signal.SIGUSR1))
            t += 2.0
        return out


class ResilienceIdle(Resilience):
    name, title = "resilience-idle", "resilience-idle"
    methods = ("POST",)
    clients, pace = 16, "34-46"
    up_args = ["--idle-close", "40ms"]
    columns = [c for c in Resilience.columns if c.key != "restarts"]

    def describe(self):
        return (f"resilience-idle: {self.n_up} fake upstreams that silently close keep-alive "
                f"connections idle for 40 ms (`--idle-close 40ms`, FIN without a response); {self.clients} "
                f"keep-alive clients each POSTing {self.body} B to /echo every 34–46 ms (random, start to start) "
                f"for {self.run_seconds():g} s, {self.rounds()} round(s). {self.proxies_note()}.")


class ResilienceRolling(Resilience):
    name, title = "resilience-rolling", "resilience-rolling"
    n_up = 3

    def describe(self):
        return (f"resilience-rolling: {self.n_up} fake upstreams (1 ms) restarted gracefully one "
                f"at a time (SIGUSR2: stop accepting, finish in-flight requests with `Connection: close`, "
                f"close idle keep-alives, listen again 0.5 s later), one restart every "
                f"{self.period(self.run_seconds()):.2g} s from t = 1 s, in turn; {self.clients} keep-alive clients "
                f"back to back (POST: {self.body} B to /echo, checked) for {self.run_seconds():g} s, "
                f"{self.rounds()} round(s). {self.proxies_note()}.")

    @staticmethod
    def period(seconds: float) -> float:
        return min(2.0, (seconds - 1.0) / 3)

    def plan(self, ups, seconds):
        out, t, k, p = [], 1.0, 0, self.period(seconds)
        while t <= seconds - 0.6:
            out.append((t, ups[k % len(ups)], signal.SIGUSR2))
            t += p
            k += 1
        return out


# -- memory per idle connection


def rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


class IdleMemory(Scenario):
    """N idle connections, each after one exchange: what each costs the proxy's resident
    set, and whether the memory comes back once they close."""
    syscall_pass = False
    own_timing = True
    conns = 3000  # HAProxy's template allows 4096 connections
    settle_s = 7  # weir's idle connections give their buffers back at the watchdog's next look (≤ 5 s)
    columns = [Column("KiB per idle conn", "kib_per_conn", "{:.2f}"),
               Column("RSS before MiB", "rss0_mib", "{:.1f}", ratio=False),
               Column("RSS idle MiB", "rss1_mib", "{:.1f}", ratio=False),
               Column("after close vs before", "after_pct", "{:+.1f} %", ratio=False)]

    def rounds(self):
        return self.opts["rounds"] if self.opts.get("rounds_set") else 1

    def variants(self):
        return [Variant("weir", "weir", 1), Variant("haproxy", "haproxy"), Variant("nginx", "nginx")]

    nginx_location = ""

    def start(self, ctx, v, upstreams, tag):
        PROCS.no_thp = True
        try:
            p = start_proxy(ctx, v, self.protocol, upstreams, tag, nginx_location=self.nginx_location)
        finally:
            PROCS.no_thp = False
        self._proc = p
        return p

    def describe(self):
        return (f"{self.title}: {self.conns} {self.what}, each after one exchange, then idle; the proxy's "
                f"VmRSS (all its processes) before, {self.settle_s} s after the last one opened, and "
                f"5 s after they all closed (a warm-up exchange first, so 'before' is a used proxy); "
                f"every proxy runs with transparent huge pages off, so its resident set grows by 4 KiB "
                f"pages, not 2 MiB ones")

    def exchange(self, s) -> None:
        raise NotImplementedError

    def load(self, ctx, seconds, warmup=False):
        import resource
        import socket
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < self.conns + 100:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, self.conns + 1000), hard))
        pids = process_tree(self._proc.pid)

        def one():
            s = socket.create_connection((HOST, ctx.proxy_port), timeout=10)
            self.exchange(s)
            return s
        for _ in range(3):
            one().close()
        if warmup:
            return {"units": 1}
        time.sleep(2)
        r0 = rss_kib(pids)
        socks = [one() for _ in range(self.conns)]
        time.sleep(self.settle_s)
        r1 = rss_kib(pids)
        for s in socks:
            s.close()
        time.sleep(5)
        r2 = rss_kib(pids)
        return {"units": self.conns, "kib_per_conn": (r1 - r0) / self.conns, "rss0_mib": r0 / 1024,
                "rss1_mib": r1 / 1024, "after_pct": 100 * (r2 - r0) / r0}

    def goal_line(self, med):
        w = med.get("weir")
        if not w:
            return None
        ok = w["kib_per_conn"] <= self.goal_kib and w["after_pct"] <= 10
        return (f"Goal: ≤ {self.goal_kib:g} KiB per idle {self.unit_name} and RSS back within 10 % "
                f"after they close: {'**met**' if ok else 'not met'} ({w['kib_per_conn']:.2f} KiB, "
                f"{w['after_pct']:+.1f} %).")


class IdleHttp(IdleMemory):
    name, title, protocol = "idle-http", "idle-http", "http"
    what, unit_name, goal_kib = "keep-alive HTTP connections", "HTTP connection", 2

    def start_upstreams(self, ctx):
        return [start_fake_upstream(ctx, 1, [])]

    def exchange(self, s):
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while not data.endswith(b"u1\n"):
            chunk = s.recv(4096)
            if not chunk:
                raise BenchError(f"closed after {data!r}")
            data += chunk


class IdleTcp(IdleMemory):
    name, title, protocol = "idle-tcp", "idle-tcp", "tcp"
    what, unit_name, goal_kib = "TCP sessions", "TCP session", 8

    def start_upstreams(self, ctx):
        return [start_fake_upstream(ctx, 1, ["--tcp-echo"])]

    def exchange(self, s):
        s.sendall(b"ping\n")
        data = b""
        while len(data) < 5:
            chunk = s.recv(100)
            if not chunk:
                raise BenchError("closed")
            data += chunk


class IdleWs(IdleMemory):
    """Idle WebSockets: each connection upgraded through the proxy and one message echoed,
    then idle, so the proxy relays two quiet streams per connection."""
    name, title, protocol = "idle-ws", "idle-ws", "http"
    what, unit_name, goal_kib = "WebSocket connections (upgraded, one message echoed)", "WebSocket", 8
    # nginx relays an upgrade with its standard WebSocket lines (its `Connection ""` is
    # then not sent, an empty value); weir and HAProxy (mode http) relay upgrades as they are.
    nginx_location = 'proxy_set_header Upgrade $http_upgrade;\n            proxy_set_header Connection "upgrade";'

    def start_upstreams(self, ctx):
        return [start_fake_upstream(ctx, 1, ["--ws-echo"])]

    def exchange(self, s):
        import base64
        key = base64.b64encode(os.urandom(16))
        s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                raise BenchError(f"closed during the upgrade after {data!r}")
            data += chunk
        head, data = data.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            raise BenchError(f"upgrade declined: {head.splitlines()[0]!r}")
        # one masked text frame "ping"; the echo comes back unmasked: 0x81 0x04 ping
        mask = os.urandom(4)
        s.sendall(b"\x81\x84" + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(b"ping")))
        while len(data) < 6:
            chunk = s.recv(100)
            if not chunk:
                raise BenchError("closed before the echo")
            data += chunk
        if data[:6] != b"\x81\x04ping":
            raise BenchError(f"unexpected echo {data!r}")


# --------------------------------------------------------------------------
# http-gzip: the proxies compress a 64 KiB text response


def gzip_page(n: int = 64 << 10) -> bytes:
    """n bytes of text that compresses as pages and API answers do: HTML list items and JSON
    lines with varying numbers and words (not one repeated byte)."""
    words = ["red", "green", "blue", "large", "small", "organic", "refurbished", "limited"]
    out, i = [], 0
    size = 0
    while size < n:
        i += 1
        line = (f'<li class="item"><a href="/products/{i * 7919 % 10007}">Product {i} — {words[i % 8]} '
                f'{words[i * 3 % 8]}</a><span class="price">{i * 37 % 500}.{i % 100:02d} EUR</span></li>\n'
                f'{{"id":{i},"name":"item-{i * 31 % 977}","tags":["{words[i % 5]}","b{i % 13}"],'
                f'"stock":{i * 13 % 101}}}\n')
        out.append(line)
        size += len(line.encode())
    return "".join(out).encode()[:n]


def decode(coding: str, data: bytes) -> bytes | None:
    """data decoded, or None when no decoder for the coding is installed."""
    try:
        if coding == "gzip":
            import gzip
            return gzip.decompress(data)
        if coding == "br":
            import brotli
            return brotli.decompress(data)
        if coding == "zstd":
            import zstandard
            return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except ImportError:
        return None
    raise BenchError(f"unknown coding {coding}")


class HttpGzip(HttpScenario):
    """A 64 KiB text page (`gzip_page`, served by the nginx upstreams as a static file)
    compressed by the proxy: weir's compress filter next to nginx's `gzip on` at the same
    level (1 and 6: nginx's gzip_comp_level is zlib's level, as weir's gzip_level), and
    HAProxy's `compression algo gzip`, which is libslz (Debian's build: +SLZ -ZLIB): one
    fixed speed-oriented level, so it stands beside both. weir's brotli and zstd rows at
    their default levels are recorded too. wrk sends `Accept-Encoding: CODING` for the
    row's coding; CPU per response is the figure, with bytes per response (head included)
    for what each bought."""
    name, title = "http-gzip", "http-gzip"
    path, conns = "/page.html", 20
    body_len = 64 << 10
    levels = (1, 6)

    def __init__(self, opts):
        super().__init__(opts)
        self.current: Variant | None = None

    @property
    def columns(self):
        return ([Column("req/s", "rps"), Column("p50 ms", "p50_ms", "{:.2f}"), Column("p99 ms", "p99_ms", "{:.2f}"),
                 Column("B/resp", "bytes_per_resp", ratio=False)]
                + cpu_columns(self) + [Column("errors", "errors", "{:.0f}", ratio=False)])

    def describe(self):
        return (f"{self.title}: {self.body_len} B text (/page.html, text/html) compressed by the proxy, "
                f"{self.conns} keep-alive connections, wrk -t{self.opts['wrk_threads']} with Accept-Encoding "
                f"for the row's coding")

    def variants(self):
        rows = []
        for lv in self.levels:
            rows.append(Variant(f"weir gzip-{lv}", "weir", 1, params={"coding": "gzip", "level": lv}))
            rows.append(Variant(f"nginx gzip-{lv}", "nginx", params={"coding": "gzip", "level": lv}))
        rows.append(Variant("haproxy slz", "haproxy", params={"coding": "gzip"}))
        rows.append(Variant("weir br-4", "weir", 1, params={"coding": "br", "level": 4}))
        rows.append(Variant("weir zstd-3", "weir", 1, params={"coding": "zstd", "level": 3}))
        return rows

    def start_upstreams(self, ctx):
        ups = super().start_upstreams(ctx)
        page = ctx.run / "www" / "page.html"
        page.write_bytes(gzip_page(self.body_len))
        os.chmod(page, 0o644)
        return ups

    def start(self, ctx, v, upstreams, tag):
        self.current = v
        coding, level = v.params["coding"], v.params.get("level")
        types = "text/html text/plain application/json"
        if v.kind == "weir":
            key = {"gzip": "gzip_level", "br": "brotli_level", "zstd": "zstd_level"}[coding]
            extra = ('[routes.all]\nlistener = "web"\npool = "app"\nfilters = ["z"]\n\n'
                     f'[filters.z]\nkind = "compress"\nencodings = ["{coding}"]\n{key} = {level}\n'
                     'min_bytes = 1024\ncontent_types = ["text/html", "text/plain", "application/json"]\n')
            return start_proxy(ctx, v, "http", upstreams, tag, pool_extra=extra)
        if v.kind == "nginx":
            loc = (f"            gzip on;\n            gzip_comp_level {level};\n"
                   f"            gzip_types {types};\n            gzip_min_length 1024;\n"
                   "            gzip_vary on;\n")
            return start_proxy(ctx, v, "http", upstreams, tag, nginx_location=loc)
        return start_proxy(ctx, v, "http", upstreams, tag,
                           haproxy_backend=f"    compression algo gzip\n    compression type {types}")

    def check(self, ctx):
        coding = self.current.params["coding"]
        want = gzip_page(self.body_len)
        for _ in range(4):  # both upstreams, twice
            c = http.client.HTTPConnection(HOST, ctx.proxy_port, timeout=5)
            try:
                c.request("GET", self.path, headers={"Accept-Encoding": coding})
                r = c.getresponse()
                body, enc = r.read(), r.getheader("Content-Encoding")
            except (OSError, http.client.HTTPException) as e:
                raise BenchError(f"GET {self.path} through the proxy failed: {e!r}") from None
            finally:
                c.close()
            if r.status != 200 or enc != coding:
                raise BenchError(f"GET {self.path}: status {r.status}, Content-Encoding {enc!r} (want 200, {coding})")
            got = decode(coding, body)
            if got is not None and got != want:
                raise BenchError(f"GET {self.path}: {coding} body decodes to {len(got)} bytes, not the page")

    def load(self, ctx, seconds, warmup=False):
        coding = self.current.params["coding"]
        w = run_wrk(f"http://{HOST}:{ctx.proxy_port}{self.path}", self.conns, seconds,
                    self.opts["wrk_threads"], [f"Accept-Encoding: {coding}"])
        secs = w["duration_us"] / 1e6
        errors = (w["connect_errors"] + w["read_errors"] + w["write_errors"] + w["status_errors"]
                  + w["timeouts"])
        if w["requests"] == 0:
            raise BenchError(f"no request completed ({errors} errors)")
        return {"units": w["requests"], "rps": w["requests"] / secs, "p50_ms": w["p50_us"] / 1000,
                "p99_ms": w["p99_us"] / 1000, "bytes_per_resp": w["bytes"] / w["requests"], "errors": errors,
                "wrk": w}

    def notes(self, res):
        med = res.get("medians", {})
        lines = []
        for lv in self.levels:
            w, n = med.get(f"weir gzip-{lv}", {}), med.get(f"nginx gzip-{lv}", {})
            if not w.get("cpu_total") or not n.get("cpu_total"):
                continue
            rs = per_round(res, f"weir gzip-{lv}", f"nginx gzip-{lv}")
            ratio = w["cpu_total"] / n["cpu_total"]
            lines.append(f"Goal, gzip level {lv}: CPU/resp ≤ nginx's: "
                         f"{'**met**' if ratio <= 1.0 else 'not met'} (weir {w['cpu_total']:.1f} µs, nginx "
                         f"{n['cpu_total']:.1f} µs: {ratio:.2f} ×; per round "
                         f"{' '.join(f'{r:.2f}' for r in rs)}).")
        return lines


# --------------------------------------------------------------------------
# config-replicas: weir replicas sharing their config through etcd


class AdminClient:
    """weir's admin API on one keep-alive connection, so a timing is weir's answer and not a
    TCP handshake."""

    def __init__(self, name: str, port: int):
        self.name, self.port = name, port
        self.conn = http.client.HTTPConnection(HOST, port, timeout=10)

    def call(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None
             ) -> tuple[int, bytes]:
        try:
            self.conn.request(method, path, body=body, headers=headers or {})
            r = self.conn.getresponse()
            return r.status, r.read()
        except (OSError, http.client.HTTPException) as e:
            self.conn.close()
            raise BenchError(f"{method} {path} on {self.name} (port {self.port}): {e!r}") from None

    def close(self) -> None:
        self.conn.close()


def nearest_rank(xs: list[float], p: float) -> float:
    """The p-th percentile by nearest rank: of 100 samples, p50 is the 50th smallest and p99 the
    99th (no interpolation: every figure is a change that happened)."""
    s = sorted(xs)
    # rounded first: 99.9 / 100 * 1000 is 999.0000000000001 in floating point, not 999
    return s[max(0, math.ceil(round(p / 100 * len(s), 9)) - 1)]


def ms_or_missed(x: float) -> str:
    return "not served" if math.isinf(x) else f"{x:.1f} ms"


class ConfigReplicas(Scenario):
    """The goal: a change written through any replica is served by every replica within 1 s
    (p99 over 100 changes, 3 replicas). One real etcd member and 3 weir replicas on one prefix;
    pool adds one after the other (each a quiet commit: nothing else in flight), change i
    through replica i mod 3. Per change: the PUT's round trip (write), and the time from
    sending it until the last replica answered 200 for the new pool (served by all). The
    embedded store (redb, one weir) takes the same adds, for the write latency next to it:
    there a commit is one local fsync; through etcd, a read of the prefix and a transaction
    that etcd commits through raft and its own fsync."""
    name, title = "config-replicas", "config-replicas"
    row_header = "store"
    unit, cpu_unit = "change", "µs/change"
    syscall_pass = False
    own_timing = True
    replicas = 3
    prefix = "weir-bench"
    poll_s = 0.001      # between two looks at the replicas that do not serve a change yet
    deadline_s = 10.0   # a change not served by all by then counts as not served (shown as inf)
    warmup_changes = 3  # one through each replica before the measured ones (BENCH_WARMUP > 0)
    goal_ms = 1000.0
    columns = [Column("changes", "changes", ratio=False),
               Column("served by all p50 ms", "conv_p50_ms", "{:.1f}", ratio=False),
               Column("p99 ms", "conv_p99_ms", "{:.1f}", ratio=False),
               Column("max ms", "conv_max_ms", "{:.1f}", ratio=False),
               Column("write p50 ms", "write_p50_ms", "{:.1f}", ratio=False),
               Column("p99 ms", "write_p99_ms", "{:.1f}", ratio=False),
               Column("max ms", "write_max_ms", "{:.1f}", ratio=False)]

    def __init__(self, opts):
        super().__init__(opts)
        self._procs: list[Proc] = []
        self._dirs: list[Path] = []
        self._admins: list[AdminClient] = []
        self._store = ""

    def rounds(self):
        return self.opts["rounds"] if self.opts.get("rounds_set") else 1

    def changes(self) -> int:
        return int(env_float("BENCH_CONFIG_CHANGES", 100))

    def variants(self):
        return [Variant(f"etcd ({self.replicas} replicas)", "weir", 1, params={"store": "etcd"}),
                Variant("redb (1 weir)", "weir", 1, params={"store": "redb"})]

    def describe(self):
        return (f"config-replicas: one etcd member (defaults: an fsync per commit) and "
                f"{self.replicas} weir replicas (`weir run --store etcd://127.0.0.1:PORT/{self.prefix} "
                f"--threads 1`); {self.changes()} pool adds one after the other (`PUT /api/v1/pools/cN`, "
                f"`If-None-Match: *`, `{{}}`), change N through replica N mod {self.replicas}. write = the "
                f"PUT's round trip; served by all = from sending the PUT until the last replica answered 200 "
                f"to `GET /api/v1/pools/cN` (from the PUT's answer on, each replica not serving it yet asked every "
                f"{self.poll_s * 1000:g} ms, the writer last, on keep-alive connections; the time an answer "
                f"arrived). redb: one weir on the "
                f"embedded store (`--data DIR`, an fsync per commit), the same adds. "
                + (f"{self.warmup_changes} unmeasured adds first" if self.opts["warmup"] > 0 else "No warm-up")
                + f"; {self.rounds()} round(s)")

    def start_upstreams(self, ctx):
        return []

    def ports(self, ctx: Ctx) -> tuple[int, int, list[int]]:
        """etcd's client and peer ports and the replicas' admin ports: BASE+2 on (the embedded
        store's weir has the usual admin port, BASE+1)."""
        b = ctx.port_base
        return b + 2, b + 3, [b + 4 + i for i in range(self.replicas)]

    def scratch(self, ctx: Ctx, what: str) -> Path:
        """A fresh data dir under the run dir, removed when the run stops: every run starts
        from an empty store."""
        d = Path(tempfile.mkdtemp(prefix=f"{what}-", dir=ctx.run / "tmp"))
        self._dirs.append(d)
        return d

    def start(self, ctx, v, upstreams, tag):
        self._procs, self._dirs, self._admins = [], [], []
        self._store = v.params["store"]
        try:
            if self._store == "etcd":
                return self.start_replicas(ctx, tag)
            return self.start_embedded(ctx, tag)
        except BenchError:
            self.stop(None)
            raise

    def start_replicas(self, ctx: Ctx, tag: str) -> Proc:
        client, peer, admins = self.ports(ctx)
        self._procs.append(start_etcd(ctx, tag, client, peer, self.scratch(ctx, "etcd")))
        url = f"etcd://{HOST}:{client}/{self.prefix}"
        for i, port in enumerate(admins, 1):
            name = f"{tag}-replica{i}"
            self._procs.append(start_weir_admin(ctx, name, ["--store", url], port))
            self._admins.append(AdminClient(f"replica {i}", port))
        return self._procs[1]

    def start_embedded(self, ctx: Ctx, tag: str) -> Proc:
        p = start_weir_admin(ctx, f"{tag}-redb", ["--data", self.scratch(ctx, "redb")], ctx.admin_port)
        self._procs.append(p)
        self._admins.append(AdminClient("redb", ctx.admin_port))
        return p

    def stop(self, p):
        for a in self._admins:
            a.close()
        for q in reversed(self._procs):  # the replicas before the etcd they follow
            PROCS.stop(q)
        for d in self._dirs:
            shutil.rmtree(d, ignore_errors=True)  # etcd preallocates 64 MiB of WAL
        self._procs, self._dirs, self._admins = [], [], []

    def check(self, ctx):
        # every weir says where its config lives: a replica that fell back to another store
        # would make the convergence figures meaningless
        want = "etcd" if self._store == "etcd" else "store"
        for a in self._admins:
            status, body = a.call("GET", "/api/v1/config")
            try:
                mode = json.loads(body).get("mode") if status == 200 else None
            except ValueError:
                mode = None
            if mode != want:
                raise BenchError(f"{a.name}: GET /api/v1/config: status {status}, mode {mode!r} (want {want!r}): "
                                 f"{body[:200]!r}")

    def load(self, ctx, seconds, warmup=False):
        n = self.warmup_changes if warmup else self.changes()
        rows = [self.change(f"{'w' if warmup else 'c'}{i}", i) for i in range(n)]
        for q in self._procs:
            if not q.alive():
                raise BenchError(f"died during the changes: {q.why_dead()}")
        return {"units": n} if warmup else self.summarize(rows)

    def change(self, pool: str, i: int) -> dict:
        """Adds `pool` through admin i mod N; with replicas, waits until every one serves it."""
        k = i % len(self._admins)
        writer, path = self._admins[k], f"/api/v1/pools/{pool}"
        t0 = time.perf_counter()
        status, body = writer.call("PUT", path, b"{}", {"If-None-Match": "*", "Content-Type": "application/json"})
        write = time.perf_counter() - t0
        if status != 201:
            raise BenchError(f"PUT {path} through {writer.name}: status {status} (want 201): {body[:200]!r}")
        row = {"pool": pool, "writer": k, "write_ms": write * 1000}
        if len(self._admins) > 1:
            at, looks = self.served(path, t0, k)
            row["served_ms"] = [None if t is None else t * 1000 for t in at]
            row["served_look"] = looks
        return row

    def served(self, path: str, t0: float, writer: int) -> tuple[list[float | None], list[int | None]]:
        """Seconds from t0 until each replica answered 200 for `path` (None: not by the
        deadline), and at which look (0: the first, right after the PUT's answer). An answer's
        arrival is later than the moment the replica had the change by at most one GET's round
        trip, plus up to `poll_s` between looks. Within a look the replicas are asked in turn,
        the writer's successor first and the writer last (it had the change when it answered):
        each replica is asked first as often as second, so their times compare; still, only a
        later look says a replica was slower."""
        n = len(self._admins)
        at: list[float | None] = [None] * n
        looks: list[int | None] = [None] * n
        order = [(writer + 1 + j) % n for j in range(n)]
        look = 0
        while True:
            tick = time.perf_counter()
            for k in order:
                if at[k] is not None:
                    continue
                a = self._admins[k]
                status, body = a.call("GET", path)
                if status == 200:
                    at[k], looks[k] = time.perf_counter() - t0, look
                elif status != 404:
                    raise BenchError(f"GET {path} on {a.name}: status {status}: {body[:200]!r}")
            if None not in at or tick - t0 > self.deadline_s:
                return at, looks
            look += 1
            time.sleep(max(0.0, tick + self.poll_s - time.perf_counter()))

    def summarize(self, rows: list[dict]) -> dict:
        writes = [r["write_ms"] for r in rows]
        m = {"units": len(rows), "changes": len(rows), "write_p50_ms": nearest_rank(writes, 50),
             "write_p99_ms": nearest_rank(writes, 99), "write_max_ms": max(writes), "per_change": rows}
        if "served_ms" in rows[0]:
            # a change some replica never served counts as infinitely late, not as absent
            conv = [max(math.inf if t is None else t for t in r["served_ms"]) for r in rows]
            m.update(conv_p50_ms=nearest_rank(conv, 50), conv_p99_ms=nearest_rank(conv, 99),
                     conv_max_ms=max(conv), not_served=sum(math.isinf(c) for c in conv))
        return m

    def notes(self, res):
        """From the measured changes of every round: how many every replica served at the
        first look after the PUT's answer, and per replica how soon it served the changes
        written through the others, how often it alone needed a later look, and its own writes."""
        rows = [r for m in res.get("rounds", []) for r in m.get("per_change", []) if "served_ms" in r]
        if not rows:
            return []
        first = sum(1 for r in rows if all(look == 0 for look in r["served_look"]))
        parts = []
        for k in range(self.replicas):
            others = [math.inf if r["served_ms"][k] is None else r["served_ms"][k] for r in rows if r["writer"] != k]
            own = [r["write_ms"] for r in rows if r["writer"] == k]
            if others and own:
                parts.append(f"replica {k + 1}: others' changes served p50 {ms_or_missed(nearest_rank(others, 50))}, "
                             f"max {ms_or_missed(max(others))}, the only one at a later look "
                             f"{sum(1 for r in rows if self.alone_later(r, k))} ×; writes through it p50 "
                             f"{nearest_rank(own, 50):.1f} ms, max {max(own):.1f} ms")
        missed = sum(m.get("not_served", 0) for m in res.get("rounds", []))
        lines = [f"Every replica served the change at the first look after the PUT's answer in {first} of "
                 f"{len(rows)} changes. Per replica (all rounds): " + "; ".join(parts) + "."]
        if missed:
            lines.append(f"{missed} change(s) not served by every replica within {self.deadline_s:g} s "
                         f"(counted as infinitely late).")
        return lines

    @staticmethod
    def alone_later(r: dict, k: int) -> bool:
        """Whether replica k served change r at a later look than every other replica (or never)."""
        mine = math.inf if r["served_look"][k] is None else r["served_look"][k]
        rest = [math.inf if look is None else look for j, look in enumerate(r["served_look"]) if j != k]
        return mine > max(rest)

    def goal_line(self, med):
        e = med.get(f"etcd ({self.replicas} replicas)", {})
        if e.get("conv_p99_ms") is None:
            return None
        ok = e["conv_p99_ms"] <= self.goal_ms
        return (f"Goal: convergence p99 ≤ 1 s ({self.replicas} replicas): "
                f"{'**met**' if ok else 'not met'} (p99 {ms_or_missed(e['conv_p99_ms'])} over "
                f"{e['changes']:.0f} changes).")


# --------------------------------------------------------------------------
# Paced: loads people run a load balancer at, below saturation. A fixed rate over 50
# connections from an open loop (oha), and one connection back to back; CPU per request
# and the tail at each, HTTP/1.1, h2c and HTTPS.


def h2load_log_percentiles(text: str) -> dict:
    """h2load's --log-file (one request a line: start µs since the epoch, status, µs until
    the end of the response): p50/p99/p99.9 in ms of the 2xx requests, and their count."""
    lat = []
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) >= 3 and f[1].isdigit() and f[1].startswith("2"):
            lat.append(int(f[2]) / 1000)
    if not lat:
        return {"count": 0}
    return {"count": len(lat), "p50_ms": nearest_rank(lat, 50), "p99_ms": nearest_rank(lat, 99),
            "p999_ms": nearest_rank(lat, 99.9)}


class PacedLoad:
    """What every paced scenario shares (mixed in before its protocol's scenario class,
    which keeps the check, the configs and the upstreams of http-small, h2-small or
    https-small): rows weir, haproxy, nginx (one thread each), the columns, and the goal:
    CPU per request ≤ 0.8 × the better peer's and p99 ≤ theirs."""
    goal = (0.8, ("haproxy", "nginx"), True)
    rate = 0  # requests/s over `conns` connections (open loop); 0 = one connection, closed loop
    # below this share of the rate the row is flagged: its figures are at a lower load
    HOLD = 0.97

    def variants(self):
        return [Variant("weir", "weir", 1), Variant("haproxy", "haproxy"), Variant("nginx", "nginx")]

    @property
    def columns(self):
        return ([Column("req/s", "rps"), Column("p50 ms", "p50_ms", "{:.3f}"), Column("p99 ms", "p99_ms", "{:.3f}"),
                 Column("p99.9 ms", "p999_ms", "{:.3f}")]
                + cpu_columns(self) + [Column("errors", "errors", "{:.0f}", ratio=False)])

    hidden = [Column("held", "held", agg="min")]  # the achieved ÷ scheduled rate, its worst round

    def held_notes(self, res: dict) -> list[str]:
        if not self.rate:
            return []
        short = [f"{m['proxy']} round {m['round']} {m['rps']:.0f}/s" for m in res.get("rounds", [])
                 if m.get("held") is not None and m["held"] < self.HOLD]
        if short:
            return [f"**Rate not held** (below {self.HOLD:.0%} of {self.rate:,}/s): " + "; ".join(short)
                    + ". oha sends on schedule and counts the wait, so a row short of the rate is one whose "
                    "connections were all busy (the proxy, or the generator's CPU, could not keep up)."]
        return [f"Every run held {self.rate:,} req/s (≥ {self.HOLD:.0%}); latency from each request's "
                f"scheduled send time (oha --latency-correction)."]

    def goal_line(self, med, row="weir"):
        line = Scenario.goal_line(self, med, row)  # TlsScenario's own takes no row
        if line and self.rate:
            short = [p for p in med if med[p].get("held") is not None and med[p]["held"] < self.HOLD]
            if row in short:
                line = line.replace("**met**", "not met (rate not held)")
            if short:
                line += f" Rate not held by {', '.join(short)}."
        return line


class RateLoad(PacedLoad):
    """RATE requests/s over 50 keep-alive connections from oha, an open loop: request i is
    due at start + i/RATE whatever the answers before it took, and goes out on a free
    connection; its latency counts from when it was due."""
    conns = 50
    http2 = False
    syscall_pass = True

    def describe(self):
        how = "h2c with prior knowledge, one stream at a time per connection" if self.http2 else "keep-alive"
        return (f"{self.title}: {self.rate:,} requests/s over {self.conns} connections ({how}), `GET {self.path}` "
                f"({self.body_len} B), open loop: oha -q {self.rate} -c {self.conns} --latency-correction"
                + (" --http2 -p 1" if self.http2 else "") + ", latency from each request's scheduled send "
                f"time; upstreams and configs as {self.peer_scenario}")

    def load(self, ctx, seconds, warmup=False):
        url = f"{self.scheme}://{HOST}:{ctx.proxy_port}{self.path}"
        r = oha.run(url, self.rate, self.conns, seconds, self.http2)
        if r["ok"] == 0:
            raise BenchError(f"no request succeeded ({r['failed']} failed: {r['error_kinds'] or r['codes']})")
        return {"units": r["ok"], "rps": r["rps"], "held": r["held"], "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"],
                "p999_ms": r["p999_ms"], "errors": r["failed"], "raw": r}

    def notes(self, res):
        cut = Counter()
        for m in res.get("rounds", []):
            cut[m["proxy"]] += m.get("raw", {}).get("aborted", 0)
        lines = self.held_notes(res)
        if sum(cut.values()):
            lines.append("Cut off by oha at the deadline (not errors, not counted): "
                         + ", ".join(f"{p} {n}" for p, n in cut.items()) + ", summed over rounds.")
        return lines


class OneConnLoad(PacedLoad):
    """One client connection, one request at a time, back to back (a closed loop): the
    latency of a lone client and the CPU per request when nothing is batched."""
    conns = 1
    syscall_pass = True


class HttpRate(RateLoad, HttpScenario):
    peer_scenario = "http-small"





class H2Rate(RateLoad, H2Scenario):
    peer_scenario = "h2-small"
    http2 = True





class HttpsRate(RateLoad, TlsScenario):
    peer_scenario = "https-small"
    compared = ("weir",)





RATES = (1000, 10000, 30000)


def at_rates(base, prefix):
    """`base` at each of RATES: one scenario each, named `PREFIX-rate-Nk`."""
    return [type(f"{base.__name__}{r // 1000}k", (base,),
                 {"name": f"{prefix}-rate-{r // 1000}k", "title": f"{prefix}-rate-{r // 1000}k", "rate": r})
            for r in RATES]


HTTP_RATES, H2_RATES, HTTPS_RATES = at_rates(HttpRate, "http"), at_rates(H2Rate, "h2"), at_rates(HttpsRate, "https")


class WrkOneConn(OneConnLoad):
    """The one-connection loop over HTTP/1.1 (plain or TLS): wrk -c1 -t1, with its p99.9."""

    def load(self, ctx, seconds, warmup=False):
        m = HttpScenario.load(self, ctx, seconds, warmup)
        m["p999_ms"] = m["wrk"]["p999_us"] / 1000
        return m


class HttpOneConn(WrkOneConn, HttpScenario):
    """wrk -c1 -t1 (wrk's percentiles: it sends the next request when the answer is in)."""
    name = title = "http-one-conn"

    def describe(self):
        return (f"{self.title}: one keep-alive connection, one request at a time back to back, `GET {self.path}` "
                f"({self.body_len} B), wrk -c1 -t1; upstreams and configs as http-small")


class HttpsOneConn(WrkOneConn, TlsScenario):
    name = title = "https-one-conn"
    compared = ("weir",)

    def describe(self):
        return (f"{self.title}: one TLS connection (one handshake), one request at a time back to back, "
                f"`GET {self.path}` ({self.body_len} B), wrk -c1 -t1 over TLS 1.3 (as https-small); upstreams "
                f"and configs as https-small")


class H2OneConn(OneConnLoad, H2Scenario):
    name = title = "h2-one-conn"

    def describe(self):
        return (f"{self.title}: one h2c connection, one stream at a time back to back, `GET {self.path}` "
                f"({self.body_len} B), h2load -c1 -m1 (percentiles from its --log-file); upstreams and configs "
                f"as h2-small")

    def load(self, ctx, seconds, warmup=False):
        url = f"{self.scheme}://{HOST}:{ctx.proxy_port}{self.path}"
        log_file = ctx.run / "tmp" / "h2load-one-conn.log"
        log_file.unlink(missing_ok=True)
        r = run_h2load(url, ["-c", 1, "-m", 1, "-t", 1, "-D", seconds, "--log-file", log_file], seconds + 30)
        if r["succeeded"] == 0:
            raise BenchError(f"no request succeeded ({r['failed']} failed, {r['errored']} errored)")
        pct = h2load_log_percentiles(log_file.read_text() if log_file.exists() else "")
        if not pct["count"]:
            raise BenchError(f"h2load wrote no 2xx request to {log_file}")
        return {"units": r["succeeded"], "rps": r["succeeded"] / r["seconds"], "p50_ms": pct["p50_ms"],
                "p99_ms": pct["p99_ms"], "p999_ms": pct["p999_ms"], "errors": r["failed"] + r["timeout"],
                "raw": r}

    def notes(self, res):
        return []


PACED = [c.name for c in (*HTTP_RATES, HttpOneConn, *H2_RATES, H2OneConn, *HTTPS_RATES, HttpsOneConn)]


SCENARIOS = {c.name: c for c in (HttpSmall, HttpFilters, HttpLarge, HttpLargePaced, HttpConn, TcpStream, TcpConn, Capacity, ResilienceFlap,
                                 ResilienceIdle, ResilienceRolling, IdleHttp, IdleTcp, IdleWs, HttpsSmall, HttpsConn,
                                 HttpsResume, H2Small, GrpcUnary, HttpGzip, ConfigReplicas,
                                 *HTTP_RATES, HttpOneConn, *H2_RATES, H2OneConn, *HTTPS_RATES, HttpsOneConn)}
GROUPS = {
    "all": list(SCENARIOS),
    "perf": ["http-small", "http-large", "http-conn", "tcp-stream", "tcp-conn"],
    "filters": ["http-filters", "http-gzip"],
    "resilience": ["resilience-flap", "resilience-idle", "resilience-rolling"],
    "memory": ["idle-http", "idle-tcp", "idle-ws"],
    "tls": ["https-small", "https-conn", "https-resume"],
    "h2": ["h2-small", "grpc-unary"],
    "config": ["config-replicas"],
    "paced": PACED,
}
