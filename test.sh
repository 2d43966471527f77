#!/usr/bin/env bash
# Runs every check weir's CI runs: formatting, lints, and all tests (unit and
# end-to-end through the real binary). Installs what they need when missing.
set -euo pipefail
cd "$(dirname "$0")"

# Debian packages the tests need beyond the Rust toolchain (Chromium for the
# dashboard test is installed by tests/browser/run.sh; later features add
# etcd, ... here): weir-tls's tests make RSA pairs with the openssl command and
# trust the system's certificate store. haproxy and nginx: the PROXY protocol
# interop tests run them as plain processes with their own configs. python3-brotli and
# python3-zstandard: the compress tests decode each coding. apache2-utils: the basic_auth
# tests make users files with its htpasswd. etcd-server and etcd-client: the replica tests
# start real etcd members and write into them with etcdctl; protobuf-compiler: the etcd
# client crate compiles etcd's .proto files with protoc (weir's `etcd` feature). nghttp2-client:
# h2load drives release/train.sh, the workload of the profile-guided build, which a test runs.
# dnsmasq-base: the tests of backends by DNS name run dnsmasq as a plain process (no service)
# on loopback, answering from a hosts file they rewrite.
DEBS=(openssl ca-certificates curl haproxy nginx python3-brotli python3-zstandard apache2-utils
  etcd-server etcd-client protobuf-compiler nghttp2-client dnsmasq-base)
missing=()
for p in "${DEBS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  # Debian would start nginx/haproxy as services (port 80) on install: forbid
  # it for this install only (as bench/run.sh does).
  policy_added=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    policy_added=1
  fi
  trap 'if [ $policy_added = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi' EXIT
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  if [ $policy_added = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
  trap - EXIT
fi
# The metrics tests parse /metrics with the reference Python client's parser.
if ! python3 -c 'import prometheus_client' 2>/dev/null; then
  echo "installing: prometheus_client (Python)"
  python3 -m pip install -q prometheus_client
fi
# The compress filter's tests decode brotli and zstd with Python's decoders: Debian's
# packages above serve the system python3; another python3 first on the PATH gets them
# from pip.
if ! python3 -c 'import brotli, zstandard' 2>/dev/null; then
  echo "installing: brotli, zstandard (Python)"
  python3 -m pip install -q brotli zstandard
fi
if command -v rustup >/dev/null; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi

# Go programs the tests run (h2spec), pinned by tests/tools/go.mod and go.sum, built with
# `go install` into a cache outside the repo; rebuilt when the pins change.
TOOLS="${WEIR_TOOLS_DIR:-$HOME/.cache/weir-tools}"
command -v go >/dev/null || PATH="$PATH:/usr/local/go/bin"
pins=$(sha256sum tests/tools/go.sum | cut -d' ' -f1)
if [ ! -x "$TOOLS/h2spec" ] || [ "$(cat "$TOOLS/pins" 2>/dev/null)" != "$pins" ]; then
  echo "installing: h2spec (go install, pinned by tests/tools)"
  mkdir -p "$TOOLS"
  (cd tests/tools && GOBIN="$TOOLS" GOFLAGS=-mod=readonly go install github.com/summerwind/h2spec/cmd/h2spec)
  echo "$pins" >"$TOOLS/pins"
fi
export WEIR_H2SPEC="$TOOLS/h2spec"

# CI builds once from a clean clone: incremental caches would only add gigabytes to its disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# Nothing is left in the checkout but target/: no __pycache__ beside the bench's modules.
export PYTHONDONTWRITEBYTECODE=1
# Each run's logs in a directory of its own, so two checkouts' runs never write the same files.
logs="$(mktemp -d "${TMPDIR:-/tmp}/weir-test.XXXXXX")"
echo "== logs: $logs"
echo "== disk: $(df -h --output=avail . | tail -1 | tr -d ' ') free"
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
# The testkit's gRPC backend (its `grpc` feature) is in: weir's e2e tests ask for it.
# weir's `etcd` feature too: its replica tests run against real etcd.
cargo clippy --workspace --all-targets --features weir/etcd -- -D warnings
echo "== module cycles"
# No crate's files import each other in a circle (crawk, pinned and installed into $TOOLS
# when missing; the crates it leaves out are listed in the script).
WEIR_TOOLS_DIR="$TOOLS" tests/acyclic/run.sh 2>&1 | tee "$logs/acyclic.log"
echo "== cargo test"
cargo test --workspace --features weir/etcd 2>&1 | tee "$logs/test.log"
# The dashboard in real headless Chromium (installs chromium and
# playwright-core when missing).
tests/browser/run.sh 2>&1 | tee "$logs/browser.log"
# The admin API against its OpenAPI document, with schemathesis (installs it
# into a venv when missing).
tests/contract/run.sh 2>&1 | tee "$logs/contract.log"
# The cargo-fuzz targets, 20 s each (nightly toolchain; installs cargo-fuzz).
tests/fuzz/run.sh 2>&1 | tee "$logs/fuzz.log"
# README.md's commands as a reader types them: the demo command verbatim (it
# builds weir in release mode), the tour's curls, `weir check` on the shown
# file, the "Without a file" session; Ctrl-C must end each with exit 0.
python3 tests/readme/run.py 2>&1 | tee "$logs/readme.log"
# The bench's goal lines and pooled verdicts (what says a speed goal is met), on made-up figures.
python3 bench/lib/test_goals.py 2>&1 | tee "$logs/bench-goals.log"
echo "== disk: target $(du -sh target 2>/dev/null | cut -f1), $(df -h --output=avail . | tail -1 | tr -d ' ') free"
# One closing line for the whole run.
awk '/^test result:/ { p += $4; f += $6; i += $8 }
     /^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$/ { p += $1; f += $3; i += $5 }
     END { printf "%d passed, %d failed, %d skipped\n", p, f, i }' "$logs/acyclic.log" "$logs/test.log" "$logs/browser.log" "$logs/contract.log" "$logs/fuzz.log" "$logs/readme.log" "$logs/bench-goals.log"
echo "== logs: $logs"
