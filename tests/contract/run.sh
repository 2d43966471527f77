#!/usr/bin/env bash
# The admin API's contract test: the OpenAPI document
# crates/weir-admin/src/api/openapi.json against the real weir binary, run in
# store mode (`weir run --data DIR`) on a free loopback port.
#
#   tests/contract/run.sh
#
# 1. The document is valid OpenAPI 3.0 (openapi-spec-validator).
# 2. tests/contract/paths.py: the document has exactly the operations of
#    docs/API.md, the server serves this document, every operation answers a
#    plausible request with its success status, and the methods the document
#    does not list answer 405 with Allow. It leaves a pool `app`, a listener
#    `web`, a route `seed`, a TLS listener `sec` and its certificate `seed`
#    (a pair made by `weir cert`) behind for step 3. It also checks what
#    docs/API.md says and a schema cannot express (current_version in a 412,
#    names with `.`, an empty transaction).
# 3. schemathesis generates requests for every operation (examples, coverage,
#    fuzzing and stateful phases, the last following the document's links from
#    PUT to GET/PUT/DELETE; a bounded number of cases each) and checks that the
#    server never answers 5xx and that every status, content type, header and
#    body is the one the document describes. About 45 s on 2 cores.
#
# Installs what it needs when missing: python3-venv (apt-get), then pinned
# schemathesis and openapi-spec-validator into a venv in the cargo target dir
# (target/contract-venv). Ends with `N passed, N failed`; exit status 1 if
# anything failed. weir's log, paths.log and schemathesis's JUnit report (a
# curl line per failure) go to target/contract-artifacts/. Environment: WEIR_BIN [target/debug/weir],
# WEIR_SKIP_BUILD=1 skips cargo build, CONTRACT_MAX_EXAMPLES [100] cases per
# operation and phase, CONTRACT_SEED [1], ARTIFACTS_DIR.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
artifacts="${ARTIFACTS_DIR:-$target/contract-artifacts}"
venv="$target/contract-venv"
doc="$root/crates/weir-admin/src/api/openapi.json"
SCHEMATHESIS_VERSION=4.32.5
SPEC_VALIDATOR_VERSION=0.9.0

apt_install() {
  echo "== installing Debian's $*"
  local sudo=""
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@"
}
command -v python3 >/dev/null || apt_install python3 python3-venv
want="schemathesis==$SCHEMATHESIS_VERSION openapi-spec-validator==$SPEC_VALIDATOR_VERSION"
if ! "$venv/bin/python" - "$want" 2>/dev/null <<'EOF'
import sys, importlib.metadata as m
for req in sys.argv[1].split():
    name, version = req.split("==")
    assert m.version(name) == version
EOF
then
  echo "== installing $want into $venv"
  rm -rf "$venv"
  # Debian's python3 makes venvs only with python3-venv (ensurepip) installed.
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    rm -rf "$venv"
    apt_install python3-venv
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install -q --disable-pip-version-check $want
fi

if [ "${WEIR_SKIP_BUILD:-0}" != "1" ]; then
  echo "== cargo build -p weir"
  (cd "$root" && cargo build -q -p weir)
fi
weir_bin="${WEIR_BIN:-$target/debug/weir}"

mkdir -p "$artifacts"
rm -f "$artifacts"/junit.xml "$artifacts"/weir.log
passed=0
failed=0
count() { # count OK NAME
  if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL - $2"; fi
}

echo "== the document is valid OpenAPI"
rc=0
"$venv/bin/openapi-spec-validator" "$doc" || rc=$?
count $rc "openapi-spec-validator $doc"

data="$(mktemp -d)"
weir_pid=""
cleanup() {
  if [ -n "$weir_pid" ]; then
    kill "$weir_pid" 2>/dev/null || true
    wait "$weir_pid" 2>/dev/null || true
  fi
  rm -rf "$data"
}
trap cleanup EXIT

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
# A certificate pair for the certificates/NAME resources paths.py makes.
"$weir_bin" cert contract.test --out "$data/certs" >/dev/null
export CONTRACT_CERT="$data/certs/contract.test.pem" CONTRACT_KEY="$data/certs/contract.test.key"

echo "== weir run --data $data --admin 127.0.0.1:$port"
"$weir_bin" run --data "$data" --admin "127.0.0.1:$port" --threads 1 >"$artifacts/weir.log" 2>&1 &
weir_pid=$!
up=1
for _ in $(seq 1 100); do
  if ! kill -0 "$weir_pid" 2>/dev/null; then break; fi
  if python3 -c "import urllib.request as u; u.urlopen('$base/healthz', timeout=1)" 2>/dev/null; then
    up=0
    break
  fi
  sleep 0.1
done
if [ "$up" != 0 ]; then
  echo "weir did not come up; its log:"
  cat "$artifacts/weir.log"
  echo "$passed passed, $((failed + 1)) failed"
  exit 1
fi

echo "== paths: the document against docs/API.md and the server"
rc=0
"$venv/bin/python" "$here/paths.py" "$base" "$doc" | tee "$artifacts/paths.log" || rc=$?
line="$(grep -E '^paths: [0-9]+ passed, [0-9]+ failed$' "$artifacts/paths.log" | tail -1 || true)"
read -r _ p _ f _ <<<"${line:-paths: 0 passed, 0 failed}"
passed=$((passed + p))
failed=$((failed + f))
if [ "$rc" != 0 ] && [ "$f" = 0 ]; then count 1 "paths.py exited $rc"; fi

# One worker: schemathesis's generators compile code in threads, which trips a
# CPython 3.11 race ("AST constructor recursion depth mismatch") with more.
echo "== schemathesis against $base/api/v1/openapi.json"
rc=0
(cd "$artifacts" && "$venv/bin/schemathesis" run "$base/api/v1/openapi.json" --url "$base" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance \
  --phases examples,coverage,fuzzing,stateful \
  --max-examples "${CONTRACT_MAX_EXAMPLES:-100}" --seed "${CONTRACT_SEED:-1}" \
  --workers 1 --request-timeout 10 --generation-database none \
  --report junit --report-junit-path "$artifacts/junit.xml" --no-color) || rc=$?
# One case per operation, from the JUnit report.
line="$("$venv/bin/python" - "$artifacts/junit.xml" <<'EOF' || true
import sys, xml.etree.ElementTree as ET
cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
p = f = 0
for c in cases:
    if c.find("failure") is not None or c.find("error") is not None:
        f += 1
    elif c.find("skipped") is None:
        p += 1
print(p, f)
EOF
)"
read -r p f <<<"${line:-0 0}"
passed=$((passed + p))
failed=$((failed + f))
if [ "$rc" != 0 ] && [ "$f" = 0 ]; then count 1 "schemathesis exited $rc"; fi

if ! kill -0 "$weir_pid" 2>/dev/null; then
  count 1 "weir exited during the test (see $artifacts/weir.log)"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
