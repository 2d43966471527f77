"""The io_uring-against-epoll floor comparison (bench/floor.sh): `weir-bench floor`
in its epoll and uring modes and weir itself, each alone on CPU 0, relaying
keep-alive HTTP/1.1 GETs to one fake-upstream on CPU 1, loaded from CPU 1 by
h2load (closed loop, -m1) and oha (paced). Rounds interleave the variants
(A B C A B C ...) because the CPU figures move with whatever else the machine
runs; the syscall counts do not. Per variant and load: syscalls per request
(perf stat -e raw_syscalls:sys_enter on the proxy's pid), CPU microseconds per
request (user and system, /proc/PID/stat) and p50/p99 latency."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import oha  # noqa: E402
from scenarios import h2load_log_percentiles, parse_h2load  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
REL = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target") / "release"
HOST = "127.0.0.1"
PROXY_PORT, UP_PORT, ADMIN_PORT = 18171, 19171, 18172
TICK = os.sysconf("SC_CLK_TCK")
# Counted one by one beside the total, for the per-request breakdown.
SYSCALLS = ("epoll_wait", "epoll_pwait", "recvfrom", "sendto", "readv", "writev", "read", "write",
            "recvmsg", "sendmsg", "io_uring_enter", "futex")
WEIR_TOML = """[global]
drain_grace = "1s"
[admin]
listen = "{host}:{admin}"
[listeners.web]
bind = "{host}:{port}"
protocol = "http"
pool = "app"
[pools.app]
endpoints = [{{ addr = "{host}:{up}" }}]
"""


def wait_port(port: int, deadline: float = 20.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"port {port} did not open")


def wait_closed(port: int, deadline: float = 20.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            time.sleep(0.05)
        except OSError:
            return
    raise SystemExit(f"port {port} still open")


def start_proxy(variant: str, cfg: Path, log) -> subprocess.Popen:
    if variant == "weir":
        argv = [REL / "weir", "run", "--config", cfg, "--threads", "1"]
    else:
        mode, *flags = variant.removeprefix("floor-").split("+")
        argv = [REL / "weir-bench", "floor", "--mode", mode, "--listen", f"{HOST}:{PROXY_PORT}",
                "--upstream", f"{HOST}:{UP_PORT}", *[f"--{f}" for f in flags]]
    p = subprocess.Popen(["taskset", "-c", "0", *map(str, argv)], stdout=log, stderr=log)
    wait_port(PROXY_PORT)
    return p


def cpu(pid: int) -> tuple[float, float, float]:
    """User and system seconds (/proc/PID/stat, sampled at the clock tick) and the
    scheduler's exact run time (schedstat, every thread's), in seconds."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    run = sum(int(Path(t, "schedstat").read_text().split()[0]) for t in Path(f"/proc/{pid}/task").iterdir())
    return int(f[11]) / TICK, int(f[12]) / TICK, run / 1e9  # utime, stime (fields 14, 15)


def h2load(conns: int, seconds: int, log: Path) -> dict:
    out = subprocess.run(["taskset", "-c", "1", "h2load", "--h1", "-c", str(conns), "-m", "1", "-D", str(seconds),
                          "--log-file", str(log), f"http://{HOST}:{PROXY_PORT}/"],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    r = parse_h2load(out)
    pct = h2load_log_percentiles(log.read_text())
    log.unlink()
    if r["succeeded"] != r["done"] or not pct["count"]:
        raise SystemExit(f"h2load: {r['done'] - r['succeeded']} of {r['done']} requests failed")
    return {"ok": r["succeeded"], "p50_ms": pct["p50_ms"], "p99_ms": pct["p99_ms"]}


def paced(rate: int, conns: int, seconds: int) -> dict:
    argv = ["taskset", "-c", "1", *oha.args(f"http://{HOST}:{PROXY_PORT}/", rate, conns, seconds, False)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    r = oha.summary(json.loads(p.stdout), rate, seconds)
    if r["failed"]:
        raise SystemExit(f"oha: {r['failed']} requests failed: {r['error_kinds']}")
    return r


def measure(variant: str, load: str, seconds: int, cfg: Path, tmp: Path) -> dict:
    with open(tmp / f"{variant}.log", "a") as log:
        p = start_proxy(variant, cfg, log)
        try:
            run_load(load, 1, tmp)  # warm-up: connections, caches
            u0, s0, r0 = cpu(p.pid)
            perf_out = tmp / "perf.txt"
            events = ",".join(["raw_syscalls:sys_enter", *(f"syscalls:sys_enter_{c}" for c in SYSCALLS)])
            perf = subprocess.Popen(["perf", "stat", "-x,", "-e", events, "-p", str(p.pid),
                                     "-o", str(perf_out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)  # perf attached
            r = run_load(load, seconds, tmp)
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=30)
            u1, s1, r1 = cpu(p.pid)
            counts = {ln.split(",")[2].split(":")[1].removeprefix("sys_enter_"): int(ln.split(",")[0])
                      for ln in perf_out.read_text().splitlines() if ",syscalls:" in ln or ",raw_syscalls:" in ln}
            sysc = counts.pop("sys_enter")
        finally:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        wait_closed(PROXY_PORT)
    n = r["ok"]
    top = ", ".join(f"{c} {k / n:.2f}" for c, k in sorted(counts.items(), key=lambda x: -x[1]) if k / n >= 0.01)
    return {**r, "rps": n / seconds, "sys_per_req": sysc / n, "breakdown": top, "user_us": (u1 - u0) / n * 1e6,
            "sys_us": (s1 - s0) / n * 1e6, "run_us": (r1 - r0) / n * 1e6}


def run_load(load: str, seconds: int, tmp: Path) -> dict:
    kind, _, arg = load.partition(":")
    if kind == "h2load":
        return h2load(int(arg), seconds, tmp / "h2load.log")
    rate, conns = arg.split("x")
    return paced(int(rate), int(conns), seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--variants", default="floor-epoll,floor-uring,weir")
    ap.add_argument("--loads", default="h2load:1,h2load:50,oha:10000x50",
                    help="h2load:CONNS (closed loop, -m1) or oha:RATExCONNS (paced)")
    a = ap.parse_args()
    variants, loads = a.variants.split(","), a.loads.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="weir-floor-"))
    # weir watches its config's directory: the logs written beside it would wake it.
    (tmp / "config").mkdir()
    cfg = tmp / "config" / "weir.toml"
    cfg.write_text(WEIR_TOML.format(host=HOST, port=PROXY_PORT, up=UP_PORT, admin=ADMIN_PORT))
    up_log = open(tmp / "upstream.log", "w")
    up = subprocess.Popen(["taskset", "-c", "1", REL / "fake-upstream", "--listen", f"{HOST}:{UP_PORT}",
                           "--name", "u1", "--threads", "1"], stdout=up_log, stderr=up_log)
    wait_port(UP_PORT)
    res: dict = {}
    try:
        for rnd in range(1, a.rounds + 1):
            for load in loads:
                for v in variants:
                    m = measure(v, load, a.seconds, cfg, tmp)
                    res.setdefault((load, v), []).append(m)
                    print(f"round {rnd} {load:14} {v:24} {m['rps']:8.0f} req/s  "
                          f"{m['sys_per_req']:5.2f} syscalls/req  cpu {m['user_us']:5.1f}u+{m['sys_us']:5.1f}s (ran {m['run_us']:5.1f}) µs/req  "
                          f"p50 {m['p50_ms']:.3f} p99 {m['p99_ms']:.3f} ms  [{m['breakdown']}]", flush=True)
    finally:
        up.terminate()
        up.wait()
    print("\nmedians (of rounds):")
    print("| load | variant | req/s | syscalls/req | user µs/req | sys µs/req | user+sys µs/req | ran µs/req | p50 ms | p99 ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (load, v), ms in res.items():
        med = {k: statistics.median(m[k] for m in ms) for k in
               ("rps", "sys_per_req", "user_us", "sys_us", "run_us", "p50_ms", "p99_ms")}
        tot = statistics.median(m["user_us"] + m["sys_us"] for m in ms)
        print(f"| {load} | {v} | {med['rps']:.0f} | {med['sys_per_req']:.2f} | {med['user_us']:.1f} | "
              f"{med['sys_us']:.1f} | {tot:.1f} | {med['run_us']:.1f} | {med['p50_ms']:.3f} | {med['p99_ms']:.3f} |")
    print(f"\nlogs: {tmp}")


if __name__ == "__main__":
    main()
