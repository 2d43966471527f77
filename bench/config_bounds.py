#!/usr/bin/env python3
"""Time and peak memory of reading config input (docs/BENCHMARKS.md,
"Config input bounds").

    bench/config_bounds.py [WEIR] [--limit SECONDS] [--cap GB]

WEIR defaults to target/release/weir. Each row runs 3 times under `/usr/bin/time -v` (peak
RSS = "Maximum resident set size") and `timeout`, with stdout and stderr to /dev/null, so
the figures are weir's own, not a terminal's; the table shows the median time and the
median peak RSS. Each run is also capped at --cap GB of address space (default 8, with
`prlimit --as`): a weir without input bounds would otherwise grow until the kernel's
OOM killer picks a process, perhaps not weir. The reload row starts `weir run -c` on a valid
file, reads VmRSS and VmHWM from /proc/PID/status, replaces the file by a bad one, sends
SIGHUP, waits for the "reload rejected" log line and reads them again.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time


def many_errors(size):
    """One pool whose `endpoints` line holds `{addr="x"}` over and over: one error each."""
    n = (size - 25) // 11
    return "[pools.app]\nendpoints = [" + ",".join(['{addr="x"}'] * n) + "]\n"


def valid(size):
    """Listener `web` plus pools with two endpoints and a host route each, up to `size` bytes."""
    out = ['[listeners.web]\nbind = "127.0.0.1:18080"\npool = "p0"\n']
    total, i = len(out[0]), 0
    while total < size:
        a, b = divmod(i, 250)
        unit = (
            f'\n[pools.p{i}]\nendpoints = [{{ addr = "10.{a // 250 % 250}.{a % 250}.{b + 1}:8080" }}, '
            f'{{ addr = "10.{a // 250 % 250}.{a % 250}.{b + 1}:8081" }}]\n'
            f'\n[routes.r{i}]\nlistener = "web"\nhost = "h{i}.example.com"\npool = "p{i}"\n'
        )
        out.append(unit)
        total += len(unit)
        i += 1
    return "".join(out)


def missing_pools(n):
    """`n` pools and `n` routes to pools that do not exist (no name close to theirs)."""
    out = ['[listeners.web]\nbind = "127.0.0.1:18080"\n']
    for i in range(n):
        out.append(
            f'[pools.p{i}]\n[routes.r{i}]\nlistener = "web"\npath_prefix = "/r{i}"\npool = "zzzz{i}"\n'
        )
    return "".join(out)


def listeners(size):
    """Distinct listeners up to `size` bytes: the duplicate-bind check sees them all."""
    out = ['[pools.app]\nendpoints = [{ addr = "127.0.0.1:9" }]\n']
    total, i = len(out[0]), 0
    while True:
        unit = (
            f'\n[listeners.l{i}]\nbind = "127.{i // 60000 % 250}.{i // 250 % 240}.{i % 250}:'
            f'{1000 + i % 60000}"\npool = "app"\n'
        )
        if total + len(unit) > size:
            return "".join(out)
        out.append(unit)
        total += len(unit)
        i += 1


CAP_GB = 8


def measure(cmd, limit, stdin=None, runs=3):
    """Median (seconds, peak RSS in MB) over `runs`, and the exit status, of `cmd`."""
    results = [measure_once(cmd, limit, stdin) for _ in range(runs)]
    median = lambda xs: sorted(xs)[len(xs) // 2]
    return median([r[0] for r in results]), median([r[1] for r in results]), results[-1][2]


def measure_once(cmd, limit, stdin=None):
    """(seconds, peak RSS in MB, exit status) of `cmd` under `timeout limit`."""
    tf = tempfile.NamedTemporaryFile(delete=False)
    tf.close()
    cap = ["prlimit", f"--as={CAP_GB << 30}", "--"]
    full = ["/usr/bin/time", "-v", "-o", tf.name, "timeout", str(limit)] + cap + cmd
    t0 = time.monotonic()
    with open(stdin or os.devnull, "rb") as inp:
        p = subprocess.run(full, stdin=inp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    secs = time.monotonic() - t0
    text = open(tf.name).read()
    os.unlink(tf.name)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    # An allocation that fails under the cap aborts (SIGABRT: 128 + 6).
    status = {124: f"timed out ({limit} s)", 134: f"out of memory ({CAP_GB} GB cap)"}.get(
        p.returncode, f"exit {p.returncode}"
    )
    return secs, rss / 1024, status


def status_mb(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(key)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def reload_row(weir, d):
    """RSS of a running weir before and after it rejects a 50 KB bad file."""
    cfg = os.path.join(d, "run.toml")
    listen = free_port()
    good = (
        f'[listeners.web]\nbind = "127.0.0.1:{listen}"\npool = "app"\n'
        '[pools.app]\nendpoints = [{ addr = "127.0.0.1:9" }]\n'
    )
    open(cfg, "w").write(good)
    log = open(os.path.join(d, "run.log"), "w+")
    p = subprocess.Popen(
        [weir, "run", "-c", cfg, "--admin", f"127.0.0.1:{free_port()}", "--threads", "2"],
        stdout=subprocess.DEVNULL, stderr=log, env=dict(os.environ, RUST_LOG="info"),
    )
    try:
        deadline = time.monotonic() + 10
        while "weir running" not in open(log.name).read():
            if time.monotonic() > deadline or p.poll() is not None:
                raise SystemExit("weir did not start: " + open(log.name).read())
            time.sleep(0.05)
        before = status_mb(p.pid, "VmRSS")
        bad = many_errors(50_000)
        tmp = cfg + ".tmp"
        open(tmp, "w").write(bad)
        os.rename(tmp, cfg)
        t0 = time.monotonic()
        p.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 120
        while "reload rejected" not in open(log.name).read():
            if time.monotonic() > deadline:
                raise SystemExit("no reload outcome")
            time.sleep(0.05)
        secs = time.monotonic() - t0
        # The watcher may reload a second time; let both finish before reading.
        time.sleep(1)
        return before, status_mb(p.pid, "VmRSS"), status_mb(p.pid, "VmHWM"), secs
    finally:
        p.terminate()
        p.wait()


def main():
    args = sys.argv[1:]
    global CAP_GB
    limit = 10
    if "--limit" in args:
        i = args.index("--limit")
        limit = int(args[i + 1])
        del args[i : i + 2]
    if "--cap" in args:
        i = args.index("--cap")
        CAP_GB = int(args[i + 1])
        del args[i : i + 2]
    weir = os.path.abspath(args[0] if args else "target/release/weir")
    with tempfile.TemporaryDirectory() as d:
        limit_bytes = 16 << 20
        files = {
            "many-errors-101k.toml": many_errors(101_000),
            "valid-8m.toml": valid(8 << 20),
            "valid-50m.toml": valid(50 << 20),
            "valid-16m.toml": valid(limit_bytes - 200),
            "errors-16m.toml": many_errors(limit_bytes),
            "syntax-16m.toml": "x\n" * (limit_bytes // 2),
            "missing-pools.toml": missing_pools(5000),
            "listeners-16m.toml": listeners(limit_bytes),
        }
        for name, text in files.items():
            open(os.path.join(d, name), "w").write(text)
        p = lambda n: os.path.join(d, n)
        rows = [
            ("101 KB, 9,179 errors on one line", [weir, "check", p("many-errors-101k.toml")], None),
            ("/dev/zero", [weir, "check", "/dev/zero"], None),
            ("/dev/zero on stdin", [weir, "check", "-"], "/dev/zero"),
            ("valid 8 MiB", [weir, "check", p("valid-8m.toml")], None),
            ("valid 50 MiB", [weir, "check", p("valid-50m.toml")], None),
            ("valid, just under 16 MiB", [weir, "check", p("valid-16m.toml")], None),
            ("16 MiB, 1.5 M errors on one line", [weir, "check", p("errors-16m.toml")], None),
            ("16 MiB, 8.4 M syntax errors (`x` lines)", [weir, "check", p("syntax-16m.toml")], None),
            ("430 KB, 5,000 routes to missing pools", [weir, "check", p("missing-pools.toml")], None),
            ("16 MiB, 272,871 listeners", [weir, "check", p("listeners-16m.toml")], None),
        ]
        print(f"weir: {weir}; each row under `timeout {limit}` and a {CAP_GB} GB address-space cap\n")
        print("| input | command | time | peak RSS | outcome |")
        print("|---|---|---|---|---|")
        for label, cmd, stdin in rows:
            secs, rss, status = measure(cmd, limit, stdin)
            shown = " ".join(["weir"] + [os.path.basename(c) if c.startswith(d) else c for c in cmd[1:]])
            if stdin:
                shown += f" < {stdin}"
            print(f"| {label} | `{shown}` | {secs:.2f} s | {rss:.0f} MB | {status} |")
        before, after, hwm, secs = reload_row(weir, d)
        print(
            f"| running weir rejects a 50 KB bad file | `weir run -c run.toml`, SIGHUP | {secs:.2f} s "
            f"| VmHWM {hwm:.0f} MB | VmRSS {before:.0f} MB before, {after:.0f} MB after |"
        )


if __name__ == "__main__":
    main()
