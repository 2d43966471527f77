#!/usr/bin/env python3
"""How long a config change through the admin API takes
(docs/BENCHMARKS.md, "Admin writes").

    bench/admin_writes.py [WEIR] [--max N] [--samples K] [--skip-store] [--skip-apply]

WEIR defaults to target/release/weir.

(a) Store mode (`weir run --data DIR`, fsync per commit): one pool, then endpoints added one
    `PUT /api/v1/pools/app/endpoints/ADDR` (If-None-Match: *) at a time. The store is grown
    to each checkpoint (1k, 2k, 5k, 10k endpoints by default) with `POST /transaction`
    batches of 500, then K single adds are timed from the client (request sent to answer
    read, on one keep-alive connection): p50 and p99 per checkpoint.
(b) File mode (`weir run -c FILE`): a config with 1,000 routes and 1,000 pools (one endpoint
    each); K endpoint registrations (PUT, no lease), each to another pool. Printed: the API
    round trip (p50/p99), and, when weir exposes it, the apply time weir measures itself
    (`weir_config_apply_seconds` on /metrics: validation of the change against the whole
    config plus the data plane's update, the store's fsync excluded): its mean over the K
    changes, and p50/p99 from the histogram's buckets.
"""

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

CHECKPOINTS = [1000, 2000, 5000, 10000]
BATCH = 500


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, proc, limit=60):
    deadline = time.time() + limit
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"weir exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit("weir did not become ready")


class Api:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method, path, body=None, headers=None):
        h = {"Content-Type": "application/json"} if body is not None else {}
        h.update(headers or {})
        data = json.dumps(body) if body is not None else None
        self.conn.request(method, "/api/v1/" + path, body=data, headers=h)
        r = self.conn.getresponse()
        return r.status, r.read()

    def metrics(self):
        self.conn.request("GET", "/metrics")
        r = self.conn.getresponse()
        return r.read().decode()


def addr(i):
    return f"10.{i // 62500 % 250}.{i // 250 % 250}.{i % 250 + 1}:8080"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def ms(x):
    return f"{x * 1000:.2f} ms"


def start(weir, args):
    admin = free_port()
    proc = subprocess.Popen(
        [weir, "run", "--admin", f"127.0.0.1:{admin}", "--threads", "1"] + args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, RUST_LOG="warn"),
    )
    wait_ready(admin, proc)
    return proc, Api(admin)


def store_mode(weir, maximum, samples):
    print(f"(a) store mode: endpoint add (PUT, fsync per commit), {samples} adds per checkpoint")
    print(f"{'endpoints':>10} {'p50':>10} {'p99':>10}")
    with tempfile.TemporaryDirectory() as data:
        proc, api = start(weir, ["--data", data])
        try:
            status, body = api.call("PUT", "pools/app", {}, {"If-None-Match": "*"})
            assert status == 201, (status, body)
            n = 0
            for checkpoint in [c for c in CHECKPOINTS if c <= maximum]:
                while n < checkpoint - samples:
                    k = min(BATCH, checkpoint - samples - n)
                    changes = [
                        {
                            "op": "put",
                            "path": f"pools/app/endpoints/{addr(n + j)}",
                            "if_none_match": "*",
                            "spec": {"weight": 1},
                        }
                        for j in range(k)
                    ]
                    status, body = api.call("POST", "transaction", {"changes": changes})
                    assert status == 200, (status, body[:300])
                    n += k
                times = []
                for _ in range(samples):
                    t = time.perf_counter()
                    status, body = api.call(
                        "PUT",
                        f"pools/app/endpoints/{addr(n)}",
                        {"weight": 1},
                        {"If-None-Match": "*"},
                    )
                    times.append(time.perf_counter() - t)
                    assert status == 201, (status, body[:300])
                    n += 1
                print(f"{checkpoint:>10} {ms(pct(times, 50)):>10} {ms(pct(times, 99)):>10}", flush=True)
        finally:
            proc.terminate()
            proc.wait()


def big_config(n):
    out = ['[listeners.web]\nbind = "127.0.0.1:0"\npool = "p0"\n']
    for i in range(n):
        out.append(
            f'\n[pools.p{i}]\nendpoints = [{{ addr = "{addr(i)}" }}]\n'
            f'\n[routes.r{i}]\nlistener = "web"\nhost = "h{i}.example.com"\npool = "p{i}"\n'
        )
    return "".join(out)


def histogram(text, name):
    """(sum, count, [(le, cumulative count)]) of an unlabelled histogram, or None."""
    total = count = None
    buckets = []
    for line in text.splitlines():
        m = re.match(rf'{name}_bucket{{le="([^"]+)"}} (\S+)', line)
        if m:
            buckets.append((float(m.group(1)), float(m.group(2))))
        elif re.match(rf"{name}_sum(\{{\}})? ", line):
            total = float(line.split()[1])
        elif re.match(rf"{name}_count(\{{\}})? ", line):
            count = float(line.split()[1])
    if count is None:
        return None
    return total, count, buckets


def bucket_pct(before, after, p):
    """The upper bound of the bucket holding the p-th percentile of the new observations."""
    b0 = dict(before[2])
    diffs = [(le, c - b0.get(le, 0)) for le, c in after[2]]
    n = diffs[-1][1]
    for le, c in diffs:
        if c >= p / 100 * n:
            return le
    return float("inf")


def apply_mode(weir, samples, n=1000):
    print(f"(b) file mode, {n} routes and {n} pools: one endpoint registration, {samples} times")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "weir.toml")
        with open(path, "w") as f:
            f.write(big_config(n))
        proc, api = start(weir, ["-c", path])
        try:
            name = "weir_config_apply_seconds"
            before = histogram(api.metrics(), name)
            times = []
            for i in range(samples):
                t = time.perf_counter()
                status, body = api.call(
                    "PUT",
                    f"pools/p{i % n}/endpoints/127.0.0.1:{20000 + i}",
                    {"weight": 1},
                    {"If-None-Match": "*"},
                )
                times.append(time.perf_counter() - t)
                assert status == 201, (status, body[:300])
            print(f"  API round trip: p50 {ms(pct(times, 50))}, p99 {ms(pct(times, 99))}")
            after = histogram(api.metrics(), name)
            if before is None or after is None:
                print(f"  {name}: not exposed by this weir")
            else:
                k = after[1] - before[1]
                mean = (after[0] - before[0]) / k
                print(
                    f"  {name}: mean {ms(mean)} over {int(k)} changes; "
                    f"p50 <= {ms(bucket_pct(before, after, 50))}, p99 <= {ms(bucket_pct(before, after, 99))}"
                )
        finally:
            proc.terminate()
            proc.wait()


def main():
    args = sys.argv[1:]
    flags = {a for a in args if a.startswith("--skip")}
    args = [a for a in args if a not in flags]
    maximum, samples = 10000, 200
    rest = []
    while args:
        a = args.pop(0)
        if a == "--max":
            maximum = int(args.pop(0))
        elif a == "--samples":
            samples = int(args.pop(0))
        else:
            rest.append(a)
    weir = rest[0] if rest else "target/release/weir"
    print(f"weir: {weir}")
    if "--skip-store" not in flags:
        store_mode(weir, maximum, samples)
    if "--skip-apply" not in flags:
        apply_mode(weir, samples)


if __name__ == "__main__":
    main()
