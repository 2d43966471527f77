#!/usr/bin/env bash
# User-space instructions per request through weir, counted by valgrind's callgrind: the same
# count for the same binary and load whatever else the machine does, where the CPU times of
# bench/run.sh swing by 10-25 % on this shared 2-core machine. Kernel time is not counted (see
# bench/run.sh for CPU per request, sys included).
#
#   bench/instructions.sh [REQUESTS]          (default 20000; h2load --h1, 50 connections)
#
# WEIR_BIN=path counts another build of weir (an older commit's, to compare).
#
# Rows: http-filters' two weir configs (bench/lib/scenarios.py): a route without filters and
# the same route with the five-filter chain; every request carries the Origin and Basic
# credentials of that scenario. One warm-up of 2000 requests first (basic_auth's one bcrypt
# check, connection set-up), counted from the next request on. Under valgrind the sha2 crate
# takes its portable code (valgrind has no SHA extensions), so basic_auth's keyed SHA-256
# counts about ten times what it costs on a CPU with them: the line "SHA-256" says how much
# of the chain that is.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-20000}"
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)"; exit 1; }
command -v h2load >/dev/null || { echo "needs h2load (apt-get install nghttp2-client)"; exit 1; }
# The features bench/run.sh builds with: a narrower build would rebuild fake-upstream
# without its WebSocket echo, and the memory group's idle-ws would fail until rebuilt.
cargo build -q --release -p weir -p weir-testkit --features weir/etcd,weir-testkit/ws
weir="${WEIR_BIN:-target/release/weir}"
out=$(mktemp -d /tmp/weir-instructions.XXXXXX)
# The upstream's command line does not name $out: its pid is kept to stop it.
up_pid=
trap '[ -n "$up_pid" ] && kill "$up_pid" 2>/dev/null; pkill -f "$out/" 2>/dev/null || true; rm -rf "$out"' EXIT
base=$((21000 + RANDOM % 2000))
listen="127.0.0.1:$base" up="127.0.0.1:$((base + 1))"
target/release/fake-upstream --listen "$up" --name app >"$out/upstream.log" 2>&1 &
up_pid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://$up/" && break; sleep 0.1; done
# The scenario's chain, users file and request headers, taken from the bench itself.
python3 - "$out" "$listen" "$up" <<'PY'
import sys
sys.path.insert(0, "bench/lib")
from scenarios import FILTER_CHAIN, FILTER_ROUTE, FILTER_USERS, FILTER_HEADERS
out, listen, up = sys.argv[1:]
open(f"{out}/users", "w").write(FILTER_USERS)
head = f'[listeners.web]\nbind = "{listen}"\nprotocol = "http"\npool = "app"\n\n[pools.app]\nendpoints = [{{ addr = "{up}" }}]\n'
open(f"{out}/route.toml", "w").write(head + FILTER_ROUTE)
chain = FILTER_CHAIN.replace("${USERS}", f"{out}/users")
open(f"{out}/chain.toml", "w").write(head + chain + FILTER_ROUTE
                                     + 'filters = ["ids", "rewrite", "office", "cors", "users"]\n')
open(f"{out}/headers", "w").write("".join(h + "\n" for h in FILTER_HEADERS))
PY
H=()
while IFS= read -r h; do H+=(-H "$h"); done <"$out/headers"
count() { # config -> instructions per request, then the SHA-256 share
    local cfg=$1
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/cg.$cfg" \
        "$weir" run -c "$out/$cfg.toml" --threads 1 >"$out/$cfg.log" 2>&1 &
    local pid=$!
    for _ in $(seq 600); do
        curl -s -o /dev/null "${H[@]}" "http://$listen/small" && break
        sleep 0.2
    done
    h2load --h1 -n 2000 -c 50 "${H[@]}" "http://$listen/small" >/dev/null
    callgrind_control -i on "$pid" >/dev/null
    h2load --h1 -n "$N" -c 50 "${H[@]}" "http://$listen/small" | grep -q "$N succeeded" \
        || { echo "h2load: not every request succeeded ($cfg)"; exit 1; }
    callgrind_control -d "$pid" >/dev/null
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    local total sha
    # (awk reads to the end: an early exit would fail the pipe under pipefail)
    total=$(callgrind_annotate "$out/cg.$cfg".1 2>/dev/null \
        | awk '/PROGRAM TOTALS/ && !t {gsub(",", "", $1); t = $1} END {print t}')
    sha=$(callgrind_annotate --inclusive=yes "$out/cg.$cfg".1 2>/dev/null \
        | awk '/sha2::sha256::(soft::compress|compress256) \[/ && !t {gsub(",", "", $1); t = $1} END {print t + 0}')
    echo "$((total / N)) $((${sha:-0} / N))"
}
read -r plain _ < <(count route)
read -r chain sha < <(count chain)
echo "user-space instructions per request, $N requests (h2load --h1 -c 50), weir --threads 1:"
echo "  route without filters   $plain"
echo "  five-filter chain       $chain   ($(python3 -c "print(f'{$chain/$plain:.2f}')") x)"
echo "  of which SHA-256        $sha   (portable code under valgrind; chain without it: $(python3 -c "print(f'{($chain-$sha)/$plain:.2f}')") x)"
