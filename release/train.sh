#!/usr/bin/env bash
# The workload release/pgo.sh profiles weir under: a few seconds of each kind of traffic a
# deployment sends (HTTP/1.1 small and large, request bodies, a filter chain with
# compression, a chain with an allow list, cors and basic_auth, an auth service, error pages,
# redirects to HTTPS, h2c, gRPC, TLS with HTTP/1.1 and HTTP/2 and new handshakes, a TCP
# relay), through release/train.toml, against the testkit's upstreams. Fails when any request
# does.
#
#   release/train.sh WEIR [PERCENT]
#
# PERCENT (default 100) scales every phase's request count: 100 (about 100 000 requests, a
# few seconds) is what pgo.sh profiles; the test command runs 2 % of it through the debug
# build, so that the workload itself cannot rot. Needs h2load (nghttp2-client) and curl,
# and the testkit's fake-upstream and grpc-upstream in TESTKIT (default target/release,
# built by `cargo build --release -p weir-testkit --features grpc`).
set -euo pipefail
cd "$(dirname "$0")/.."
weir=$(realpath "$1")
scale=${2:-100}
testkit=${TESTKIT:-target/release}
for t in h2load curl; do
    command -v $t >/dev/null || { echo "train.sh: needs $t (apt-get install nghttp2-client curl)" >&2; exit 1; }
done
for b in fake-upstream grpc-upstream; do
    [ -x "$testkit/$b" ] || { echo "train.sh: no $testkit/$b (cargo build --release -p weir-testkit --features grpc)" >&2; exit 1; }
done

dir=$(mktemp -d /tmp/weir-train.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

# Eight ports: TRAIN_PORTS when the caller chose them (the test does, from its own), else
# eight in a row that nothing listens on, below the kernel's ephemeral range.
if [ -n "${TRAIN_PORTS:-}" ]; then
    read -r -a ports <<<"$TRAIN_PORTS"
else
    free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
    for _ in $(seq 50); do
        base=$((20000 + RANDOM % 12000))
        ok=1
        for i in $(seq 0 7); do free $((base + i)) || { ok=0; break; }; done
        [ $ok = 1 ] && break
    done
    ports=($(seq "$base" $((base + 7))))
fi
[ ${#ports[@]} = 8 ] || { echo "train.sh: TRAIN_PORTS must name eight ports" >&2; exit 1; }
export PORT_HTTP=${ports[0]} PORT_TLS=${ports[1]} PORT_TCP=${ports[2]} PORT_ADMIN=${ports[3]}
export PORT_UP1=${ports[4]} PORT_UP2=${ports[5]} PORT_GRPC=${ports[6]} PORT_ECHO=${ports[7]}
export DIR=$dir

wait_port() { # port, pid, name: until something listens there (while the process runs)
    for _ in $(seq 600); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || { echo "train.sh: $3 exited; its log:" >&2; cat "$dir/$3.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "train.sh: nothing listens on $1 ($3)" >&2
    exit 1
}
start() { # name, then the command
    local name=$1
    shift
    "$@" >"$dir/$name.log" 2>&1 &
    pids+=($!)
}
start up1 "$testkit/fake-upstream" --listen "127.0.0.1:$PORT_UP1" --name up1
wait_port "$PORT_UP1" "${pids[-1]}" up1
start up2 "$testkit/fake-upstream" --listen "127.0.0.1:$PORT_UP2" --name up2
wait_port "$PORT_UP2" "${pids[-1]}" up2
start grpc "$testkit/grpc-upstream" --listen "127.0.0.1:$PORT_GRPC" --name grpc --threads 1
wait_port "$PORT_GRPC" "${pids[-1]}" grpc
start echo "$testkit/fake-upstream" --listen "127.0.0.1:$PORT_ECHO" --tcp-echo
wait_port "$PORT_ECHO" "${pids[-1]}" echo

"$weir" cert localhost 127.0.0.1 --out "$dir/certs" >/dev/null
# basic_auth's users: `train`, password `train` (`htpasswd -nbB -C 4 train train`; the
# lowest cost, since only the first request of the workload verifies it).
echo 'train:$2y$04$Yd7oUlsNkXdNQID.dXB40uwOMW/k83qGt6CCV8qn7SAbLlKGt37LK' >"$dir/users"
echo '<!doctype html><title>Not here</title><p>Not here.' >"$dir/error.html"
python3 -c 'import os, string, sys; sys.stdout.write(string.Template(open(sys.argv[1]).read()).substitute(os.environ))' \
    release/train.toml >"$dir/weir.toml"
"$weir" run -c "$dir/weir.toml" >"$dir/weir.log" 2>&1 &
weir_pid=$!
pids+=($weir_pid)
ready() { curl -fs -o /dev/null "http://127.0.0.1:$PORT_ADMIN/readyz"; }
for _ in $(seq 600); do
    ready && break
    kill -0 $weir_pid 2>/dev/null || { echo "train.sh: weir exited; its log:" >&2; cat "$dir/weir.log" >&2; exit 1; }
    sleep 0.1
done
ready || { echo "train.sh: weir not ready after 60 s; its log:" >&2; tail -20 "$dir/weir.log" >&2; exit 1; }

# One gRPC Unary call's message: EchoRequest{message: "hi"}, length-prefixed.
printf '\x00\x00\x00\x00\x04\x0a\x02hi' >"$dir/call.bin"
head -c 16384 /dev/urandom >"$dir/body.bin"
# h2load sees HTTP statuses only: one call first, to know the relayed calls succeed.
curl -s --http2-prior-knowledge -D "$dir/grpc.head" -o "$dir/grpc.reply" --data-binary @"$dir/call.bin" \
    -H 'content-type: application/grpc' -H 'te: trailers' "http://127.0.0.1:$PORT_HTTP/weir.test.Echo/Unary" || true
if ! grep -q '^grpc-status: 0' "$dir/grpc.head" || ! grep -q hi "$dir/grpc.reply"; then
    echo "train.sh: a gRPC call through weir did not succeed:" >&2
    cat "$dir/grpc.head" >&2
    exit 1
fi

n() { # a phase's count, scaled (at least 1)
    local v=$(($1 * scale / 100))
    echo $((v > 0 ? v : 1))
}
load() { # what, then h2load's arguments: every request must get a 2xx (or the class in WANT)
    local what=$1 class=${WANT:-2xx} out want got
    shift
    out=$(h2load "$@" 2>&1) || true
    want=$(echo "$out" | awk '/^requests:/ {print $2}')
    # "status codes: 400 2xx, 0 3xx, 0 4xx, 0 5xx": the count before the class asked for.
    got=$(echo "$out" | awk -v c="$class" '/^status codes:/ {
        for (i = 3; i < NF; i++) { k = $(i + 1); sub(",", "", k); if (k == c) print $i } }')
    if [ -z "$want" ] || [ "$got" != "$want" ]; then
        echo "train.sh: $what: not every request got a $class:" >&2
        echo "$out" | grep -E "^(requests|status codes):" >&2
        exit 1
    fi
    echo "  $what: $want requests"
}
web=http://127.0.0.1:$PORT_HTTP tls=https://127.0.0.1:$PORT_TLS
echo "training $weir ($scale %):"
load "HTTP/1.1, small answers" --h1 -n "$(n 20000)" -c 20 "$web/"
load "HTTP/1.1, 64 KiB answers" --h1 -n "$(n 1000)" -c 4 "$web/bytes/65536"
load "HTTP/1.1, 16 KiB bodies echoed" --h1 -n "$(n 2000)" -c 8 -d "$dir/body.bin" "$web/echo"
load "HTTP/1.1, a filter chain, compressed" --h1 -n "$(n 10000)" -c 20 \
    -H 'Origin: https://app.example.com' -H 'Accept-Encoding: gzip, br, zstd' "$web/api/bytes/2048"
members=(-H 'Origin: https://app.example.com' -H 'Authorization: Basic dHJhaW46dHJhaW4=')
load "HTTP/1.1, a members' chain" --h1 -n "$(n 10000)" -c 20 "${members[@]}" "$web/members/"
load "h2c, a members' chain" -n "$(n 5000)" -c 10 -m 10 "${members[@]}" "$web/members/"
# Without credentials the same route answers 401: the chain above ran, not the site route.
WANT=4xx load "HTTP/1.1, the members' chain refusing" --h1 -n "$(n 200)" -c 4 "$web/members/"
load "HTTP/1.1, an auth service asked" --h1 -n "$(n 3000)" -c 20 "$web/sso/"
WANT=4xx load "HTTP/1.1, error pages" --h1 -n "$(n 2000)" -c 20 "$web/sso/status/404"
WANT=3xx load "HTTP/1.1, redirects to HTTPS" --h1 -n "$(n 2000)" -c 20 "$web/plain/"
load "h2c, small answers" -n "$(n 20000)" -c 10 -m 10 "$web/"
load "gRPC over h2c" -n "$(n 20000)" -c 10 -m 10 -d "$dir/call.bin" \
    -H 'content-type: application/grpc' -H 'te: trailers' "$web/weir.test.Echo/Unary"
load "HTTPS, HTTP/1.1" --h1 -n "$(n 5000)" -c 10 "$tls/"
load "HTTPS, HTTP/2" -n "$(n 10000)" -c 10 -m 10 "$tls/"
load "HTTPS, a handshake each" --h1 -n "$(n 500)" -c "$(n 500)" "$tls/"
load "gRPC over TLS" -n "$(n 5000)" -c 10 -m 10 -d "$dir/call.bin" \
    -H 'content-type: application/grpc' -H 'te: trailers' "$tls/weir.test.Echo/Unary"
for _ in $(seq "$(n 200)"); do
    exec 3<>"/dev/tcp/127.0.0.1/$PORT_TCP"
    echo ping >&3
    line=""
    read -r -t 10 line <&3 || true
    exec 3<&-
    [ "$line" = ping ] || { echo "train.sh: the TCP relay answered '$line' to ping (10 s)" >&2; exit 1; }
done
echo "  TCP relay: $(n 200) connections"

# The profile is written when weir exits: a clean stop, not a kill.
kill -TERM $weir_pid
wait $weir_pid || { echo "train.sh: weir exited with $?; its log:" >&2; tail -20 "$dir/weir.log" >&2; exit 1; }
