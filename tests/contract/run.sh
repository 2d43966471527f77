#!/usr/bin/env bash
# The admin API's contract test: the OpenAPI document
# crates/weir-admin/src/api/openapi.json against the real weir binary, once for each
# config store weir can write to, each on a free loopback admin port:
#
#   store  the embedded store: `weir run --data DIR` (a temporary DIR);
#   etcd   etcd shared by replicas: `weir run --store etcd://127.0.0.1:PORT/weir`, against
#          one real etcd member this script starts (free loopback client and peer ports, a
#          temporary data dir, a cluster token of its own, its warnings logged) and waits
#          for (up to 60 s) until its `GET /health` says {"health":"true"}.
# Everything it starts is stopped, and the temporary dirs removed, on exit.
#
#   tests/contract/run.sh
#
# 1. The document is valid OpenAPI 3.0 (openapi-spec-validator). Once.
# Then, against each store (steps and failures are labelled [store] or [etcd]):
# 2. tests/contract/paths.py: the document has exactly the operations of
#    docs/API.md, the server serves this document, GET /api/v1/config names the
#    store it runs from, every operation answers a plausible request with its
#    success status, and the methods the document does not list answer 405 with
#    Allow. It leaves a pool `app`, a listener `web`, a route `seed`, a TLS
#    listener `sec` and its certificate `seed` (a pair made by `weir cert`) behind
#    for step 3. It also checks what docs/API.md says and a schema cannot express
#    (current_version in a 412, names with `.`, an empty transaction).
# 3. schemathesis generates requests for every operation (examples, coverage,
#    fuzzing and stateful phases, the last following the document's links from
#    PUT to GET/PUT/DELETE; a bounded number of cases each) and checks that the
#    server never answers 5xx and that every status, content type, header and
#    body is the one the document describes. About 45 s on 2 cores per store.
# 4. etcd only: with etcd stopped, a write answers 503 problem+json of type
#    store-unreachable, a type and status the document lists.
#
# Installs what it needs when missing: python3-venv, etcd-server and (to build
# weir with its etcd feature) protobuf-compiler (apt-get), then pinned
# schemathesis and openapi-spec-validator into a venv in the cargo target dir
# (target/contract-venv). Builds weir with `--features etcd`. Ends with a
# `STORE: N passed, N failed (S s)` line per store and `N passed, N failed` in
# all; exit status 1 if anything failed. Artifacts go to
# target/contract-artifacts/STORE/ (STORE is `store` or `etcd`): weir.log,
# paths.log and schemathesis's JUnit report junit.xml (a curl line per failure),
# and for etcd etcd.log. Environment: WEIR_BIN [target/debug/weir] (built with
# `--features etcd`), WEIR_SKIP_BUILD=1 skips cargo build, CONTRACT_MAX_EXAMPLES
# [100] cases per operation and phase, CONTRACT_SEED [1], ARTIFACTS_DIR.
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
STORES="store etcd"
# Generous: the machine is often loaded, and a first election plus fsyncs can be slow.
ETCD_DEADLINE=60
WEIR_DEADLINE=60
# A picked port can be taken by someone else before etcd binds it; each retry picks anew.
ETCD_ATTEMPTS=5

apt_install() {
  echo "== installing Debian's $*"
  local sudo=""
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@"
}
command -v python3 >/dev/null || apt_install python3 python3-venv
command -v etcd >/dev/null || apt_install etcd-server
if [ "${WEIR_SKIP_BUILD:-0}" != "1" ]; then
  command -v protoc >/dev/null || apt_install protobuf-compiler
fi
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
  # The build test.sh's `cargo test` makes (the same features, so the same artifacts).
  echo "== cargo test --workspace --features weir/etcd --no-run"
  (cd "$root" && cargo test -q --workspace --features weir/etcd --no-run)
fi
weir_bin="${WEIR_BIN:-$target/debug/weir}"
etcd_bin="$(command -v etcd)"

mkdir -p "$artifacts"
# Also the files of the single-store layout this script had before.
rm -rf "$artifacts"/junit.xml "$artifacts"/weir.log "$artifacts"/paths.log
for store in $STORES; do rm -rf "${artifacts:?}/$store"; done
passed=0
failed=0
count() { # count OK NAME
  if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL - $2"; fi
}
# N free loopback ports, all bound at once so they differ.
free_ports() {
  python3 - "$1" <<'EOF'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

echo "== the document is valid OpenAPI"
rc=0
"$venv/bin/openapi-spec-validator" "$doc" || rc=$?
count $rc "openapi-spec-validator $doc"

tmp="$(mktemp -d)"
weir_pid=""
etcd_pid=""
stop() { # stop PID: SIGTERM, then reap
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
stop_all() {
  if [ -n "$weir_pid" ]; then stop "$weir_pid"; weir_pid=""; fi
  if [ -n "$etcd_pid" ]; then stop "$etcd_pid"; etcd_pid=""; fi
}
cleanup() {
  stop_all
  rm -rf "$tmp"
}
trap cleanup EXIT
# The EXIT trap also runs on these (bash runs it after a signal's trap exits).
trap 'exit 130' INT
trap 'exit 143' TERM

# A certificate pair for the certificates/NAME resources paths.py makes.
"$weir_bin" cert contract.test --out "$tmp/certs" >/dev/null
export CONTRACT_CERT="$tmp/certs/contract.test.pem" CONTRACT_KEY="$tmp/certs/contract.test.key"

# {"health":"true"} from etcd's GET /health on client port $1 (etcd 3.4: a leader, no alarm).
etcd_healthy() {
  python3 - "$1" 2>/dev/null <<'EOF'
import json, sys, urllib.request as u
with u.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=2) as r:
    assert json.load(r).get("health") == "true"
EOF
}

# Starts one etcd member with its log in $1; sets etcd_pid and etcd_client. Fails (1) with
# the reason in etcd_why if it does not become healthy within ETCD_DEADLINE seconds.
start_etcd() {
  local log="$1" attempt client peer token deadline from
  for attempt in $(seq 1 "$ETCD_ATTEMPTS"); do
    read -r client peer <<<"$(free_ports 2)"
    from=$(($(stat -c %s "$log" 2>/dev/null || echo 0) + 1)) # this attempt's part of the log
    # Unique per run and attempt: should a port be reused by another etcd, the two refuse
    # each other (cluster ID mismatch) instead of merging.
    token="weir-contract-$$-$(date +%s%N)-$attempt"
    rm -rf "$tmp/etcd-data"
    echo "== etcd on 127.0.0.1:$client (peer $peer), data $tmp/etcd-data, token $token" | tee -a "$log"
    (
      # etcd reads every ETCD_* variable as a flag: none of the caller's may leak in.
      while read -r v; do unset "$v"; done < <(compgen -e | grep '^ETCD_' || true)
      exec "$etcd_bin" --name contract --data-dir "$tmp/etcd-data" \
        --listen-client-urls "http://127.0.0.1:$client" \
        --advertise-client-urls "http://127.0.0.1:$client" \
        --listen-peer-urls "http://127.0.0.1:$peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "contract=http://127.0.0.1:$peer" \
        --initial-cluster-token "$token" --initial-cluster-state new \
        --logger zap --log-outputs stderr --log-level warn
    ) </dev/null >>"$log" 2>&1 &
    etcd_pid=$!
    deadline=$((SECONDS + ETCD_DEADLINE))
    while kill -0 "$etcd_pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
      if etcd_healthy "$client"; then
        etcd_client="$client"
        return 0
      fi
      sleep 0.1
    done
    if kill -0 "$etcd_pid" 2>/dev/null; then
      stop "$etcd_pid"
      etcd_pid=""
      etcd_why="not healthy after ${ETCD_DEADLINE} s"
      return 1
    fi
    wait "$etcd_pid" 2>/dev/null || true
    etcd_pid=""
    if ! tail -c "+$from" "$log" | grep -q "address already in use"; then
      etcd_why="it exited"
      return 1
    fi
    echo "== a port was taken; picking others" | tee -a "$log"
  done
  etcd_why="ports taken $ETCD_ATTEMPTS times over"
  return 1
}

# Waits until weir ($weir_pid) answers GET $1/healthz; fails (1) if it exits or
# WEIR_DEADLINE passes.
wait_weir() {
  local deadline=$((SECONDS + WEIR_DEADLINE))
  while kill -0 "$weir_pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
    if python3 -c "import urllib.request as u; u.urlopen('$1/healthz', timeout=1)" 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# The whole contract (steps 2 and 3) against weir running from store $1.
contract() {
  local store="$1" dir="$artifacts/$1" port base rc line p f
  local passed0=$passed failed0=$failed start=$SECONDS
  mkdir -p "$dir"
  port="$(free_ports 1)"
  base="http://127.0.0.1:$port"
  local source args
  case "$store" in
    store)
      mkdir -p "$tmp/data"
      source="$tmp/data/weir.redb"
      args=(--data "$tmp/data")
      ;;
    etcd)
      if ! start_etcd "$dir/etcd.log"; then
        echo "[$store] etcd did not start ($etcd_why); its log:"
        cat "$dir/etcd.log"
        count 1 "[$store] etcd did not start: $etcd_why (see $dir/etcd.log)"
        summary+=("$store: $((passed - passed0)) passed, $((failed - failed0)) failed ($((SECONDS - start)) s)")
        return
      fi
      source="etcd://127.0.0.1:$etcd_client/weir"
      # Its cache in the scratch directory: the default, ./weir-data/store-cache.json, is
      # in the working directory, the checkout.
      args=(--store "$source" --store-cache "$tmp/store-cache.json")
      ;;
  esac
  export CONTRACT_MODE="$store" CONTRACT_SOURCE="$source"

  echo "== [$store] weir run ${args[*]} --admin 127.0.0.1:$port --threads 1"
  "$weir_bin" run "${args[@]}" --admin "127.0.0.1:$port" --threads 1 >"$dir/weir.log" 2>&1 &
  weir_pid=$!
  if ! wait_weir "$base"; then
    echo "[$store] weir did not come up; its log:"
    cat "$dir/weir.log"
    count 1 "[$store] weir did not come up (see $dir/weir.log)"
    stop_all
    summary+=("$store: $((passed - passed0)) passed, $((failed - failed0)) failed ($((SECONDS - start)) s)")
    return
  fi

  echo "== [$store] paths: the document against docs/API.md and the server"
  rc=0
  "$venv/bin/python" "$here/paths.py" "$base" "$doc" | tee "$dir/paths.log" | sed -u "s/^/[$store] /" || rc=$?
  line="$(grep -E '^paths: [0-9]+ passed, [0-9]+ failed$' "$dir/paths.log" | tail -1 || true)"
  read -r _ p _ f _ <<<"${line:-paths: 0 passed, 0 failed}"
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then count 1 "[$store] paths.py exited $rc"; fi

  # One worker: schemathesis's generators compile code in threads, which trips a
  # CPython 3.11 race ("AST constructor recursion depth mismatch") with more.
  echo "== [$store] schemathesis against $base/api/v1/openapi.json"
  rc=0
  (cd "$dir" && "$venv/bin/schemathesis" run "$base/api/v1/openapi.json" --url "$base" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance \
    --phases examples,coverage,fuzzing,stateful \
    --max-examples "${CONTRACT_MAX_EXAMPLES:-100}" --seed "${CONTRACT_SEED:-1}" \
    --workers 1 --request-timeout 10 --generation-database none \
    --report junit --report-junit-path "$dir/junit.xml" --no-color) || rc=$?
  # One case per operation, from the JUnit report; the failing ones named.
  line="$("$venv/bin/python" - "$dir/junit.xml" "$store" <<'EOF' || true
import sys, xml.etree.ElementTree as ET
cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
p = f = 0
for c in cases:
    if c.find("failure") is not None or c.find("error") is not None:
        f += 1
        print(f"FAIL - [{sys.argv[2]}] schemathesis: {c.get('name')}", file=sys.stderr)
    elif c.find("skipped") is None:
        p += 1
print(p, f)
EOF
)"
  read -r p f <<<"${line:-0 0}"
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then count 1 "[$store] schemathesis exited $rc"; fi

  if ! kill -0 "$weir_pid" 2>/dev/null; then
    count 1 "[$store] weir exited during the test (see $dir/weir.log)"
  fi
  if [ -n "$etcd_pid" ] && ! kill -0 "$etcd_pid" 2>/dev/null; then
    count 1 "[$store] etcd exited during the test (see $dir/etcd.log)"
  fi

  if [ "$store" = etcd ] && kill -0 "$weir_pid" 2>/dev/null; then
    # What only a store that can be away does: a write while it is answers the documented 503.
    echo "== [$store] etcd stopped: a write answers 503 store-unreachable, as documented"
    stop "$etcd_pid"
    etcd_pid=""
    rc=0
    "$venv/bin/python" - "$base" "$doc" <<'EOF' || rc=$?
import http.client, json, sys, urllib.parse
base, doc = sys.argv[1], json.load(open(sys.argv[2]))
u = urllib.parse.urlsplit(base)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
c.request("PUT", "/api/v1/pools/unreachable", body=b"{}",
          headers={"Content-Type": "application/json", "If-None-Match": "*"})
r = c.getresponse()
status, ctype, body = r.status, r.getheader("Content-Type", ""), r.read()
problem_types = doc["components"]["schemas"]["Problem"]["properties"]["type"]["enum"]
try:
    p = json.loads(body)
except ValueError:
    p = {}
errors = []
if status != 503:
    errors.append(f"status {status}, want 503")
if "503" not in doc["paths"]["/api/v1/pools/{name}"]["put"]["responses"]:
    errors.append("the document lists no 503 for PUT /api/v1/pools/{name}")
if ctype.split(";")[0].strip() != "application/problem+json":
    errors.append(f"Content-Type {ctype!r}")
if not str(p.get("type", "")).endswith("store-unreachable"):
    errors.append(f"type {p.get('type')!r}, want ...store-unreachable")
elif p["type"] not in problem_types:
    errors.append(f"type {p['type']!r} is not among the document's problem types")
if p.get("status") != status:
    errors.append(f"body status {p.get('status')!r}")
print(f"PUT /api/v1/pools/unreachable: {status} {body[:300].decode(errors='replace')}")
for e in errors:
    print(f"  {e}")
sys.exit(1 if errors else 0)
EOF
    count $rc "[$store] with etcd stopped, PUT /api/v1/pools/unreachable answers 503 store-unreachable as documented"
    if ! kill -0 "$weir_pid" 2>/dev/null; then
      count 1 "[$store] weir exited when etcd stopped (see $dir/weir.log)"
    fi
  fi
  stop_all
  summary+=("$store: $((passed - passed0)) passed, $((failed - failed0)) failed ($((SECONDS - start)) s)")
}

summary=()
for store in $STORES; do
  contract "$store"
done
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
