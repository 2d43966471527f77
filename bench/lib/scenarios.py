"""Scenarios: what upstreams to start, which proxies to compare, how to load them,
and which columns the table shows.

To add a scenario (e.g. issue 3's capacity run or issue 4's resilience runs),
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
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness import BenchError, Proc
from proxies import HOST, Ctx, Upstream, Variant, start_bench_upstream, start_nginx_upstream, start_proxy

LIB = Path(__file__).resolve().parent
WRK_LUA = LIB.parent / "configs" / "wrk-report.lua"


@dataclass
class Column:
    header: str
    key: str
    fmt: str = "{:.0f}"
    ratio: bool = True  # show weir/peer for this column


class Scenario:
    name = ""
    title = ""          # one line for the table heading
    protocol = "http"   # which config templates the proxies use
    unit = "req"        # what CPU and syscalls are divided by
    cpu_scale = 1.0     # cpu µs per unit is divided by this (1e6 for seconds per GiB)
    cpu_unit = "µs/req"
    columns: list[Column] = []

    def __init__(self, opts: dict):
        self.opts = opts

    def variants(self) -> list[Variant]:
        return [Variant("weir", "weir", 1), Variant("weir-2t", "weir", 2),
                Variant("haproxy", "haproxy"), Variant("nginx", "nginx")]

    def describe(self) -> str:
        return self.title

    def start_upstreams(self, ctx: Ctx) -> list[Upstream]:
        raise NotImplementedError

    def start(self, ctx: Ctx, v: Variant, upstreams: list[Upstream], tag: str) -> Proc:
        return start_proxy(ctx, v, self.protocol, upstreams, tag)

    def check(self, ctx: Ctx) -> None:
        """One correct exchange through the proxy, or BenchError."""

    def load(self, ctx: Ctx, seconds: int, warmup: bool = False) -> dict:
        raise NotImplementedError

    # issue 7's "done when" for this scenario: (max weir CPU ÷ best peer CPU,
    # peers considered, whether weir's p99 must also be ≤ the best peer's); None = no goal
    goal: tuple[float, tuple[str, ...], bool] | None = None

    def goal_line(self, med: dict) -> str | None:
        if self.goal is None or "weir" not in med:
            return None
        limit, peers, p99 = self.goal
        have = [p for p in peers if p in med and med[p].get("cpu_total")]
        if not have or not med["weir"].get("cpu_total"):
            return None
        best = min(have, key=lambda p: med[p]["cpu_total"])
        cpu = med["weir"]["cpu_total"] / med[best]["cpu_total"]
        ok = cpu <= limit
        want = f"CPU/{self.unit} ≤ {limit:g} × {'the better of ' + ' and '.join(peers) if len(peers) > 1 else peers[0]}"
        got = f"weir's CPU is {cpu:.2f} × {best}'s"
        if p99:
            lat = [p for p in have if med[p].get("p99_ms")]
            if lat and med["weir"].get("p99_ms"):
                bestl = min(lat, key=lambda p: med[p]["p99_ms"])
                r = med["weir"]["p99_ms"] / med[bestl]["p99_ms"]
                ok = ok and r <= 1.0
                want += ", p99 ≤ theirs"
                got += f", p99 {r:.2f} × {bestl}'s"
        return f"Goal (issue 7): {want}: {'**met**' if ok else 'not met'} ({got})."


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


def http_get(port: int, path: str, close: bool = False) -> tuple[int, bytes]:
    c = http.client.HTTPConnection(HOST, port, timeout=5)
    try:
        c.request("GET", path, headers={"Connection": "close"} if close else {})
        r = c.getresponse()
        return r.status, r.read()
    except (OSError, http.client.HTTPException) as e:
        raise BenchError(f"GET {path} through the proxy failed: {e!r}") from None
    finally:
        c.close()


class HttpScenario(Scenario):
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
            status, body = http_get(ctx.proxy_port, self.path, self.close)
            if status != 200 or len(body) != self.body_len:
                raise BenchError(f"GET {self.path} through the proxy: status {status}, "
                                 f"{len(body)} body bytes (want 200, {self.body_len}): {body[:80]!r}")

    def load(self, ctx, seconds, warmup=False):
        w = run_wrk(f"http://{HOST}:{ctx.proxy_port}{self.path}", self.conns, seconds,
                    self.opts["wrk_threads"], ["Connection: close"] if self.close else [])
        secs = w["duration_us"] / 1e6
        errors = (w["connect_errors"] + w["read_errors"] + w["write_errors"] + w["status_errors"]
                  + w["timeouts"])
        if w["requests"] == 0:
            raise BenchError(f"no request completed ({errors} errors)")
        return {"units": w["requests"], "rps": w["requests"] / secs, "p50_ms": w["p50_us"] / 1000,
                "p99_ms": w["p99_us"] / 1000, "mib_s": w["bytes"] / secs / (1 << 20), "errors": errors,
                "wrk": w}


class HttpSmall(HttpScenario):
    name, title = "http-small", "http-small"
    goal = (0.8, ("haproxy", "nginx"), True)


class HttpLarge(HttpScenario):
    name, title = "http-large", "http-large"
    path, body_len, conns = "/large", 1 << 20, 8


class HttpConn(HttpScenario):
    name, title = "http-conn", "http-conn"
    close = True
    goal = (1.0, ("haproxy", "nginx"), False)


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


SCENARIOS = {c.name: c for c in (HttpSmall, HttpLarge, HttpConn, TcpStream, TcpConn)}
