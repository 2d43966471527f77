"""ghz, the gRPC load generator (pinned by bench/tools, installed by run.sh into
~/.cache/weir-tools): run it against the Echo service of bench/grpc/echo.proto and
read its JSON report, or, for the check, its debug log of every reply."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from harness import BenchError

PROTO = Path(__file__).resolve().parents[1] / "grpc" / "echo.proto"
PIN = Path(__file__).resolve().parents[1] / "tools" / "go.mod"


def exe() -> str:
    path = os.environ.get("BENCH_GHZ") or shutil.which("ghz")
    if not path or not os.access(path, os.X_OK):
        raise BenchError("ghz not found (bench/run.sh installs it with Go from bench/tools; "
                         "see build.log)")
    return path


def version() -> str:
    """The pinned version (`go install` from a module records no version of its own)."""
    try:
        for line in PIN.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[-2].endswith("bojand/ghz"):
                return f"ghz {parts[-1]}"
    except OSError:
        pass
    return "ghz ?"


def run(target: str, call: str, data: dict, args: list, timeout: float, debug: Path | None = None) -> dict:
    """One ghz run over h2c (--insecure); its JSON report."""
    # Templates off: every call sends the same message, and ghz spends less CPU.
    argv = [exe(), "--insecure", "--proto", PROTO, "--call", call, "-d", json.dumps(data),
            "--disable-template-functions", "--disable-template-data",
            "--cpus", len(os.sched_getaffinity(0)), "-O", "json", *args]
    if debug:
        argv += ["--debug", debug]
    argv.append(target)
    try:
        p = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"ghz did not finish within {timeout:.0f}s") from None
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        raise BenchError(f"ghz failed (rc {p.returncode}): {(p.stderr or p.stdout).strip()[-300:]}") from None


def summary(report: dict) -> dict:
    """Counts, status codes, errors and latency percentiles (ms) of a JSON report."""
    codes = report.get("statusCodeDistribution") or {}
    ok = codes.get("OK", 0)
    pct = {d["percentage"]: d["latency"] / 1e6 for d in report.get("latencyDistribution") or []}
    return {"count": report.get("count", 0), "ok": ok, "errors": report.get("count", 0) - ok,
            "seconds": report.get("total", 0) / 1e9, "codes": codes,
            "error_kinds": report.get("errorDistribution") or {},
            "p50_ms": pct.get(50), "p90_ms": pct.get(90), "p99_ms": pct.get(99),
            "mean_ms": report.get("average", 0) / 1e6}


def replies(debug: Path) -> list[dict]:
    """The replies in a ghz debug log (its "Received response" lines)."""
    out = []
    try:
        lines = debug.read_text(errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("message") == "Received response" and rec.get("response"):
            try:
                reply = json.loads(rec["response"])
            except (json.JSONDecodeError, TypeError):
                continue
            if isinstance(reply, dict):  # a failed call logs "null"
                out.append(reply)
    return out
