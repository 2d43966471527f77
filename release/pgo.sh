#!/usr/bin/env bash
# Builds weir with profile-guided optimization, the build to deploy: LLVM lays out and
# inlines the code by where a profiled run spent its time. Proxying crosses a lot of code
# per request (tokio, the codecs, http's maps, mimalloc): more than the CPU's 32 KiB
# instruction cache, which a plain build misses about 1 000 times per gRPC call (callgrind).
# This build has 59 % fewer of those misses and runs 15-23 % fewer instructions per
# request (docs/BENCHMARKS.md, "What the build rests on").
#
#   release/pgo.sh [cargo build options, e.g. --features etcd]
#
# Result: target/pgo/release/weir (CARGO_TARGET_DIR/pgo/... when that is set). Steps: a build
# that counts what runs (target/pgo-train), release/train.sh's workload through it, the
# counts merged (llvm-profdata, from rustup's llvm-tools component, added when missing),
# then the build that uses them. Two release builds: about ten minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
profiles="$target/pgo-profiles"

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
    echo "pgo: adding rustup's llvm-tools component (llvm-profdata)"
    rustup component add llvm-tools >/dev/null
fi
[ -x "$profdata" ] || { echo "pgo: no $profdata (rustup component add llvm-tools)" >&2; exit 1; }

echo "pgo: building the testkit's upstreams (cargo build --release -p weir-testkit --features grpc)"
CARGO_TARGET_DIR="$target" cargo build -q --release -p weir-testkit --features grpc

# `--target`: RUSTFLAGS then reach weir's own crates and dependencies only, not the build
# scripts and macros cargo runs while building (they would count, and slow the build).
echo "pgo: building weir to profile ($target/pgo-train)"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$profiles" CARGO_TARGET_DIR="$target/pgo-train" \
    cargo build -q --release -p weir --target "$host" "$@"

rm -rf "$profiles"
TESTKIT="$target/release" release/train.sh "$target/pgo-train/$host/release/weir" "${PGO_PERCENT:-100}"
"$profdata" merge -o "$profiles/weir.profdata" "$profiles"/*.profraw

echo "pgo: building weir with the profile ($target/pgo)"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$profiles/weir.profdata" CARGO_TARGET_DIR="$target/pgo" \
    cargo build -q --release -p weir --target "$host" "$@"
mkdir -p "$target/pgo/release"
cp "$target/pgo/$host/release/weir" "$target/pgo/release/weir"
echo "pgo: built $target/pgo/release/weir"
