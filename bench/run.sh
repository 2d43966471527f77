#!/usr/bin/env bash
# Side-by-side benchmark: weir vs HAProxy vs nginx on loopback.
#
#   bench/run.sh [scenario|group ...]
#       scenarios: http-small http-large http-conn tcp-stream tcp-conn (= group "perf"), http-large-paced
#                  capacity resilience-flap resilience-idle resilience-rolling
#                  idle-http idle-tcp idle-ws (= group "memory": memory per idle connection)
#                  https-small https-conn https-resume (= group "tls")
#                  h2-small grpc-unary (= group "h2")
#                  http-filters http-gzip (= group "filters"; http-gzip: compression next to nginx's gzip)
#                  config-replicas (= group "config": 3 replicas sharing their config through etcd)
#                  http-rate-1k http-rate-10k http-rate-30k http-one-conn, the same for h2- and https-
#                  (= group "paced": fixed rates from an open loop, and one connection back to back)
#       groups:    all (every scenario, the default), perf, resilience (the three resilience-*), memory, tls,
#                  h2, filters, config, paced
#
# Installs wrk, h2load (nghttp2-client), haproxy, nginx (+ stream module), etcd (etcd-server, etcd-client) and
# protoc (protobuf-compiler) from Debian when missing, builds weir in release mode with its etcd feature
# (for grpc-unary also ghz, with Go, and the testkit's grpc-upstream; for the *-rate-* scenarios
# oha, with cargo), then runs
# bench/lib/bench.py. See bench/README.md for the
# environment knobs (BENCH_QUICK=1, BENCH_ROUNDS, BENCH_SECONDS, BENCH_PROXIES, ...).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# ---------------------------------------------------------------- 1. tools
need=()
command -v wrk >/dev/null || need+=(wrk)
command -v h2load >/dev/null || need+=(nghttp2-client)   # h2-small's HTTP/2 load
command -v haproxy >/dev/null || need+=(haproxy)
if ! command -v nginx >/dev/null; then
    need+=(nginx)
fi
if [ ! -e /usr/lib/nginx/modules/ngx_stream_module.so ] \
    && ! { command -v nginx >/dev/null && nginx -V 2>&1 | grep -q -- '--with-stream '; }; then
    need+=(libnginx-mod-stream)
fi
command -v python3 >/dev/null || need+=(python3)
# config-replicas: a real etcd member (etcdctl to look into it after a run), and protoc,
# which weir's etcd feature needs to compile etcd's .proto files at build time
command -v etcd >/dev/null || need+=(etcd-server)
command -v etcdctl >/dev/null || need+=(etcd-client)
command -v protoc >/dev/null || need+=(protobuf-compiler)
# syscall counting is optional: perf if it works, else strace
command -v perf >/dev/null || command -v strace >/dev/null || need+=(strace)

if [ ${#need[@]} -gt 0 ] && [ "${BENCH_SKIP_INSTALL:-0}" = 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "bench: missing ${need[*]}; run as root or: sudo apt-get install -y ${need[*]}" >&2
        exit 1
    fi
    log "installing ${need[*]}"
    # Debian would start nginx/haproxy/etcd as services (ports 80, 2379) on install: forbid
    # that for the duration of the install, unless a policy already exists.
    policy_added=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        policy_added=1
    fi
    trap '[ $policy_added = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    [ $policy_added = 1 ] && rm -f /usr/sbin/policy-rc.d
    trap - EXIT
fi

# ---------------------------------------------------------------- 2. build
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
export BENCH_BIN_DIR=${BENCH_BIN_DIR:-$TARGET_DIR/release}
STAMP=$(date +%Y%m%d-%H%M%S)
export BENCH_OUT_DIR=${BENCH_OUT_DIR:-$ROOT/bench/out/$STAMP}
mkdir -p "$BENCH_OUT_DIR"
export BENCH_COMMAND="bench/run.sh${*:+ $*}"
for v in BENCH_QUICK BENCH_ROUNDS BENCH_SECONDS BENCH_PROXIES BENCH_TCP_BYTES BENCH_TCP_STREAMS BENCH_WRK_THREADS \
         BENCH_SYSCALL_SECONDS BENCH_PEER_DEFER BENCH_PIN BENCH_CAPACITY_SECONDS BENCH_RESILIENCE_SECONDS \
         BENCH_CONFIG_CHANGES BENCH_PGO; do
    [ -n "${!v:-}" ] && BENCH_COMMAND="$v=${!v} $BENCH_COMMAND"
done

if [ "${BENCH_SKIP_BUILD:-0}" = 0 ]; then
    command -v cargo >/dev/null || { echo "bench: cargo not found (install Rust)" >&2; exit 1; }
    # weir with its etcd feature (`--store etcd://...`), for config-replicas; the feature adds
    # the etcd client and nothing on the request path, so every other scenario runs the same weir.
    log "building (cargo build --release -p weir -p weir-bench -p weir-testkit --features weir/etcd,weir-testkit/ws), log: $BENCH_OUT_DIR/build.log"
    if ! cargo build --release -p weir -p weir-bench -p weir-testkit --features weir/etcd,weir-testkit/ws \
        >"$BENCH_OUT_DIR/build.log" 2>&1; then
        # weir may not build while it is being written: go on with the peers and
        # report weir's rows as failed, as long as the load generator builds.
        err=$(grep -m1 -E '^error' "$BENCH_OUT_DIR/build.log" || tail -1 "$BENCH_OUT_DIR/build.log")
        export BENCH_WEIR_BUILD_ERROR="cargo build failed: ${err} (see build.log)"
        log "$BENCH_WEIR_BUILD_ERROR"
        if ! cargo build --release -p weir-bench >>"$BENCH_OUT_DIR/build.log" 2>&1; then
            echo "bench: weir-bench does not build either; see $BENCH_OUT_DIR/build.log" >&2
            exit 1
        fi
    fi
fi

# weir with aws-lc-rs instead of ring, for the tls scenarios' weir-awslc row: its own
# target dir, so the default build keeps its provider.
export BENCH_WEIR_AWSLC=${BENCH_WEIR_AWSLC:-$TARGET_DIR/awslc/release/weir}
awslc=0
for a in "${@:-all}"; do
    case $a in all|tls|https-*) awslc=1 ;; esac
done
[ -n "${BENCH_PROXIES:-}" ] && [[ ",$BENCH_PROXIES," != *,weir-awslc,* ]] && awslc=0
if [ $awslc = 1 ] && [ "${BENCH_SKIP_BUILD:-0}" = 0 ] && [ -z "${BENCH_WEIR_BUILD_ERROR:-}" ]; then
    log "building weir with aws-lc-rs (CARGO_TARGET_DIR=$TARGET_DIR/awslc cargo build --release -p weir --features aws-lc-rs)"
    if ! CARGO_TARGET_DIR="$TARGET_DIR/awslc" cargo build --release -p weir --features aws-lc-rs \
        >>"$BENCH_OUT_DIR/build.log" 2>&1; then
        err=$(grep -E '^error' "$BENCH_OUT_DIR/build.log" | tail -1 || true)
        export BENCH_WEIR_AWSLC_ERROR="cargo build --features aws-lc-rs failed: ${err:-see build.log} (see build.log)"
        log "$BENCH_WEIR_AWSLC_ERROR"
    fi
fi

# BENCH_PGO=1: weir built with profile-guided optimization (release/pgo.sh, the build to
# deploy), for weir-pgo rows beside weir's (and weir-chain-pgo beside weir-chain).
if [ "${BENCH_PGO:-0}" = 1 ]; then
    pgo_bin="$TARGET_DIR/pgo/release/weir"
    if [ "${BENCH_SKIP_BUILD:-0}" = 0 ]; then
        log "building weir with profile-guided optimization (release/pgo.sh --features etcd, about ten minutes)"
        if ! CARGO_TARGET_DIR="$TARGET_DIR" release/pgo.sh --features etcd >>"$BENCH_OUT_DIR/build.log" 2>&1; then
            log "release/pgo.sh failed (see build.log): no weir-pgo rows"
            pgo_bin=""
        fi
    fi
    if [ -n "$pgo_bin" ] && [ -x "$pgo_bin" ]; then
        export BENCH_WEIR_PGO=$pgo_bin
    else
        log "no $TARGET_DIR/pgo/release/weir: no weir-pgo rows"
    fi
fi

# gRPC (grpc-unary): ghz, pinned by bench/tools/go.mod and go.sum, built with `go install`
# into a cache outside the repo (rebuilt when the pins change), and the testkit's
# grpc-upstream (its `grpc` feature: a build of its own, so weir's features stay as they are).
grpc=0
for a in "${@:-all}"; do
    case $a in all|h2|grpc-*) grpc=1 ;; esac
done
if [ $grpc = 1 ]; then
    TOOLS=${WEIR_TOOLS_DIR:-$HOME/.cache/weir-tools}
    export BENCH_GHZ=${BENCH_GHZ:-$TOOLS/ghz}
    pins=$(sha256sum bench/tools/go.sum | cut -d' ' -f1)
    if [ "$BENCH_GHZ" = "$TOOLS/ghz" ] && { [ ! -x "$BENCH_GHZ" ] || [ "$(cat "$TOOLS/ghz.pins" 2>/dev/null)" != "$pins" ]; }; then
        command -v go >/dev/null || PATH="$PATH:/usr/local/go/bin"
        log "installing ghz (go install, pinned by bench/tools) into $TOOLS"
        mkdir -p "$TOOLS"
        if (cd bench/tools && GOBIN="$TOOLS" GOFLAGS=-mod=readonly go install github.com/bojand/ghz/cmd/ghz) \
            >>"$BENCH_OUT_DIR/build.log" 2>&1; then
            echo "$pins" >"$TOOLS/ghz.pins"
        else
            log "ghz did not install (needs Go; see build.log): grpc-unary will fail"
        fi
    fi
    if [ "${BENCH_SKIP_BUILD:-0}" = 0 ]; then
        log "building grpc-upstream (cargo build --release -p weir-testkit --features grpc --bin grpc-upstream)"
        if ! cargo build --release -p weir-testkit --features grpc --bin grpc-upstream \
            >>"$BENCH_OUT_DIR/build.log" 2>&1; then
            err=$(grep -E '^error' "$BENCH_OUT_DIR/build.log" | tail -1 || true)
            export BENCH_GRPC_BUILD_ERROR="cargo build of grpc-upstream failed: ${err:-see build.log} (see build.log)"
            log "$BENCH_GRPC_BUILD_ERROR"
        fi
    fi
fi

# Paced scenarios (*-rate-*): oha, an open-loop generator (a fixed rate, latency from each
# request's scheduled send time), pinned here and installed with cargo into a cache outside
# the repo when missing or of another version (bench/lib/oha.py says the same version).
OHA_VERSION=1.16.0
oha=0
for a in "${@:-all}"; do
    case $a in all|paced|*-rate-*) oha=1 ;; esac
done
if [ $oha = 1 ]; then
    TOOLS=${WEIR_TOOLS_DIR:-$HOME/.cache/weir-tools}
    export BENCH_OHA=${BENCH_OHA:-$TOOLS/oha/bin/oha}
    if [ "$BENCH_OHA" = "$TOOLS/oha/bin/oha" ] && ! "$BENCH_OHA" --version 2>/dev/null | grep -q "^oha $OHA_VERSION\$"; then
        log "installing oha $OHA_VERSION (cargo install --locked) into $TOOLS/oha"
        if ! cargo install -q --locked --version "$OHA_VERSION" --root "$TOOLS/oha" oha \
            >>"$BENCH_OUT_DIR/build.log" 2>&1; then
            log "oha did not install (see build.log): the *-rate-* scenarios will fail"
        fi
    fi
fi

# ---------------------------------------------------------------- 3. run
# bench.py stops every process it started on exit, error, Ctrl-C or SIGTERM.
exec python3 -B "$ROOT/bench/lib/bench.py" "$@"   # -B: no __pycache__ writes
