"""oha, the open-loop load generator of the paced scenarios (pinned by bench/run.sh,
installed with `cargo install` into ~/.cache/weir-tools/oha): a fixed request rate over
a fixed set of connections, each request's latency from its *scheduled* send time
(`--latency-correction`), so a proxy that stalls is charged for the requests that
waited behind the stall (no coordinated omission, as a closed loop like wrk has)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from harness import BenchError

VERSION = "1.16.0"  # keep in step with OHA_VERSION in bench/run.sh
DEADLINE = "aborted due to deadline"  # oha's error for a request it cut off at -z's end


def exe() -> str:
    path = os.environ.get("BENCH_OHA") or shutil.which("oha")
    if not path or not os.access(path, os.X_OK):
        raise BenchError(f"oha not found (bench/run.sh installs oha {VERSION} with cargo; see build.log)")
    return path


def version() -> str:
    try:
        r = subprocess.run([exe(), "--version"], capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or f"oha {VERSION}?"
    except (BenchError, OSError, subprocess.TimeoutExpired):
        return "oha ?"


def args(url: str, rate: int, conns: int, seconds: float, http2: bool) -> list[str]:
    """`rate` requests/s over `conns` keep-alive connections for `seconds`; with `http2`
    one stream at a time per connection (h2c with prior knowledge for http://). `-w`: the
    requests in flight at the deadline finish and count (else oha cancels them as errors)."""
    a = [exe(), "--no-tui", "--output-format", "json", "-z", f"{seconds:g}s", "-c", str(conns),
         "-q", str(rate), "--latency-correction", "-w", "--insecure"]
    if http2:
        a += ["--http2", "-p", "1"]
    return a + [url]


def run(url: str, rate: int, conns: int, seconds: float, http2: bool = False) -> dict:
    argv = args(url, rate, conns, seconds, http2)
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        raise BenchError(f"oha did not finish within {seconds + 60:.0f}s") from None
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError:
        raise BenchError(f"oha failed (rc {p.returncode}): {(p.stderr or p.stdout).strip()[-300:]}") from None
    return summary(report, rate, seconds)


def summary(report: dict, rate: float, seconds: float) -> dict:
    """Counts, the achieved rate and latency percentiles (ms) of oha's JSON report.
    Successful = 2xx; every other status and every error (oha's errorDistribution) fails,
    but for the requests oha itself cut off at the deadline (`aborted`: with --http2 it does
    so despite -w, up to one per connection), which say nothing of the proxy.
    `held` = successful requests per second over the scheduled `seconds` ÷ `rate`."""
    codes = {str(k): int(v) for k, v in (report.get("statusCodeDistribution") or {}).items()}
    errors = {str(k): int(v) for k, v in (report.get("errorDistribution") or {}).items()}
    aborted = errors.pop(DEADLINE, 0)
    ok = sum(v for k, v in codes.items() if k.startswith("2"))
    failed = sum(codes.values()) - ok + sum(errors.values())
    pct = report.get("latencyPercentiles") or {}

    def ms(key: str):
        v = pct.get(key)
        return None if v is None else v * 1000  # oha reports seconds

    rps = ok / seconds if seconds else 0.0
    return {"ok": ok, "failed": failed, "aborted": aborted, "codes": codes, "error_kinds": errors, "rps": rps,
            "held": rps / rate if rate else None, "p50_ms": ms("p50"), "p90_ms": ms("p90"),
            "p99_ms": ms("p99"), "p999_ms": ms("p99.9"),
            "oha_seconds": (report.get("summary") or {}).get("total")}
