#!/usr/bin/env bash
# The io_uring-against-epoll floor (docs/BENCHMARKS.md "io_uring against epoll: the floor"):
# builds weir, weir-bench and fake-upstream in release, then runs bench/lib/floor.py
# (pass its options through, e.g. --rounds 5 --seconds 20). Needs h2load, perf, taskset,
# and oha (bench/run.sh installs it under ~/.cache/weir-tools/oha).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p weir -p weir-bench -p weir-testkit --bins
export PATH="$HOME/.cache/weir-tools/oha/bin:$PATH"
exec python3 bench/lib/floor.py "$@"
