#!/usr/bin/env bash
# testssl.sh against weir's TLS listener: weir with a self-signed ECDSA P-256
# pair from `weir cert`, default TLS settings, in front of one fake backend. Not part of
# test.sh (it takes about a minute and a half and judges settings, not behaviour); the
# summary of a run is in docs/TLS.md.
#
#   tests/tls-audit/run.sh            # installs testssl.sh (Debian) when missing
#
# Output: target/tls-audit/testssl.txt
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
if ! command -v testssl >/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "testssl.sh missing; run as root or: sudo apt-get install testssl.sh" >&2; exit 1; }
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq testssl.sh >/dev/null
fi
cargo build --release -q -p weir -p weir-testkit
OUT="$ROOT/target/tls-audit"
rm -rf "$OUT" && mkdir -p "$OUT"
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
"$BIN/weir" cert localhost 127.0.0.1 --out "$OUT/certs" >/dev/null
cat >"$OUT/weir.toml" <<TOML
[admin]
listen = "127.0.0.1:18462"
[listeners.web]
bind = "127.0.0.1:18460"
pool = "app"
[listeners.web.tls]
certificates = [{ cert = "$OUT/certs/localhost.pem", key = "$OUT/certs/localhost.key", default = true }]
[pools.app]
endpoints = [{ addr = "127.0.0.1:18461" }]
TOML
"$BIN/fake-upstream" --listen 127.0.0.1:18461 >"$OUT/upstream.log" 2>&1 &
UP=$!
"$BIN/weir" run -c "$OUT/weir.toml" >"$OUT/weir.log" 2>&1 &
WEIR=$!
trap 'kill $UP $WEIR 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/18460) 2>/dev/null && break
    sleep 0.1
done
testssl --quiet --color 0 --warnings off --fast 127.0.0.1:18460 | tee "$OUT/testssl.txt"
