#!/usr/bin/env bash
# The dashboard's browser test: real headless Chromium against the real
# weir binary. Installs what it needs when missing (Debian's chromium, the pinned
# playwright-core), builds weir and fake-upstream, then runs the test.
#
#   tests/browser/run.sh
#
# Ends with `N passed, N failed`; exit status 1 if anything failed. The
# screenshot and the logs of weir, the upstreams and the browser console go to
# target/browser-artifacts/. Environment: WEIR_BIN, FAKE_UPSTREAM_BIN, CHROMIUM,
# ARTIFACTS_DIR (see dashboard.test.mjs); WEIR_SKIP_BUILD=1 skips cargo build.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "== installing Debian's chromium"
  sudo=""
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium
fi

# weir's etcd feature (a replica's dashboard is checked) compiles etcd's protos with protoc.
if ! command -v protoc >/dev/null; then
  echo "== installing Debian's protobuf-compiler"
  sudo=""
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq protobuf-compiler
fi

if [ ! -d "$here/node_modules/playwright-core" ]; then
  echo "== npm ci (tests/browser)"
  (cd "$here" && npm ci --no-audit --no-fund)
fi

if [ "${WEIR_SKIP_BUILD:-0}" != "1" ]; then
  # The build test.sh's `cargo test` makes (the same features, so the same artifacts: a
  # narrower `cargo build -p` resolves features apart and compiles much of the tree again).
  echo "== cargo test --workspace --features weir/etcd --no-run"
  (cd "$root" && cargo test -q --workspace --features weir/etcd --no-run)
fi

echo "== dashboard in headless Chromium"
cd "$root"
exec node "$here/dashboard.test.mjs" "$@"
