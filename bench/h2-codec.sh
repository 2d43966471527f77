#!/usr/bin/env bash
# The HTTP/2 server codec alone: bare h2c responders, no proxying, CPU per request side by
# side in one run. weir-h2's server connection (crates/weir-h2/examples/responder.rs), the
# same responder on the `h2` crate (h2_crate_responder.rs, what weir serves HTTP/2 with
# today), and HAProxy answering by itself (`http-request return`), each on one thread pinned
# to CPU 1, under `h2load -c 50 -m 10 -t 1` on CPU 0: the load of bench/run.sh's h2-small.
#
#   bench/h2-codec.sh [ROUNDS] [SECONDS]      (default 5 rounds of 8 s, each responder in turn)
#
# Prints CPU µs per request (user, sys, total) per round and their medians, and each
# responder's total ÷ HAProxy's per round. Needs h2load (nghttp2-client) and haproxy.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-5}" SECS="${2:-8}"
for t in h2load haproxy taskset; do
    command -v "$t" >/dev/null || { echo "needs $t"; exit 1; }
done
cargo build -q --release -p weir-h2 --examples
out=$(mktemp -d /tmp/weir-h2-codec.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT
base=$((23000 + RANDOM % 2000))
cat >"$out/haproxy.cfg" <<EOF
global
    nbthread 1
defaults
    mode http
    timeout client 30s
    timeout server 30s
    timeout connect 5s
frontend bare
    bind 127.0.0.1:$((base + 2)) proto h2
    http-request return status 200 content-type text/plain string "hello world!"
EOF
start() { # name port -> pid
    case $1 in
        weir-h2) taskset -c 1 target/release/examples/responder "127.0.0.1:$2" >"$out/$1.log" 2>&1 & ;;
        h2-crate) taskset -c 1 target/release/examples/h2_crate_responder "127.0.0.1:$2" >"$out/$1.log" 2>&1 & ;;
        haproxy) taskset -c 1 haproxy -db -f "$out/haproxy.cfg" >"$out/$1.log" 2>&1 & ;;
    esac
    echo $!
}
measure() { # name port -> "requests utime stime" (clock ticks)
    local pid
    pid=$(start "$1" "$2")
    for _ in $(seq 100); do
        curl -s -o /dev/null --http2-prior-knowledge "http://127.0.0.1:$2/" && break
        sleep 0.05
    done
    taskset -c 0 h2load -c 50 -m 10 -t 1 -D 1 "http://127.0.0.1:$2/" >/dev/null
    local a b n
    a=$(cut -d' ' -f14,15 "/proc/$pid/stat")
    n=$(taskset -c 0 h2load -c 50 -m 10 -t 1 -D "$SECS" "http://127.0.0.1:$2/" \
        | awk '/^requests:/ {print $8}')
    b=$(cut -d' ' -f14,15 "/proc/$pid/stat")
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    echo "$n $a $b"
}
names=(weir-h2 h2-crate haproxy)
for r in $(seq "$ROUNDS"); do
    for i in 0 1 2; do
        echo "$r ${names[$i]} $(measure "${names[$i]}" $((base + i)))" >>"$out/raw"
    done
done
python3 - "$out/raw" "$(getconf CLK_TCK)" "$SECS" <<'PY'
import statistics, sys
tck = int(sys.argv[2])
rows = {}
for line in open(sys.argv[1]):
    r, name, n, ua, sa, ub, sb = line.split()
    n = int(n)
    u = (int(ub) - int(ua)) / tck / n * 1e6
    s = (int(sb) - int(sa)) / tck / n * 1e6
    rows.setdefault(name, []).append((int(r), n, u, s))
med = lambda xs: statistics.median(xs)
print("| responder | req/s | CPU µs/req user | sys | total | ÷ HAProxy, per round |")
print("|---|---:|---:|---:|---:|---|")
hap = {r: u + s for r, _, u, s in rows["haproxy"]}
for name, rs in rows.items():
    per = " ".join(f"{(u + s) / hap[r]:.2f}" for r, _, u, s in rs)
    print(f"| {name} | {med([n for _, n, _, _ in rs]) / float(sys.argv[3]):.0f} "
          f"| {med([u for *_, u, _ in rs]):.2f} | {med([s for *_, s in rs]):.2f} "
          f"| {med([u + s for *_, u, s in rs]):.2f} | {per} (median {med([(u + s) / hap[r] for r, _, u, s in rs]):.2f}) |")
PY
