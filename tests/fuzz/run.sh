#!/usr/bin/env bash
# The cargo-fuzz targets of weir's hand-written parsers, each run for FUZZ_SECONDS [20] with
# libFuzzer: crates/weir-h1/fuzz (request and response framing: no panic, the same framing however
# the bytes are split) and crates/weir-h2/fuzz (what a client sends a server connection, what a
# server sends a client connection, HPACK blocks: no panic, errors that stay errors, bounded
# output, events that follow each stream's life; see weir-h2's src/fuzz.rs).
# Needs the nightly toolchain (cargo-fuzz's sanitizer flags); installs cargo-fuzz when
# missing, cached outside the repo in ~/.cache/weir-test/cargo-fuzz. The corpus grows in
# crates/CRATE/fuzz/corpus (ignored by git), from the seeds in crates/CRATE/fuzz/seeds; a crash
# leaves its input in crates/CRATE/fuzz/artifacts and fails the run.
#
#   tests/fuzz/run.sh
#
# Ends with `N passed, N failed` (one per target).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
seconds="${FUZZ_SECONDS:-20}"
tools="$HOME/.cache/weir-test/cargo-fuzz"
export PATH="$tools/bin:$PATH"

if ! cargo +nightly --version >/dev/null 2>&1; then
  # rustup cannot fetch a toolchain here (no network beyond the package registries).
  echo "FAIL - the nightly toolchain is missing: cargo-fuzz needs it (rustup toolchain install nightly)"
  echo "0 passed, 1 failed"
  exit 1
fi
if ! command -v cargo-fuzz >/dev/null; then
  echo "== installing cargo-fuzz into $tools"
  cargo install -q cargo-fuzz --locked --root "$tools" || { echo "0 passed, 1 failed"; exit 1; }
fi

mkdir -p "$root/target"
passed=0
failed=0
for crate in weir-h1 weir-h2; do
  cd "$root/crates/$crate"
  for target in $(cargo +nightly fuzz list); do
    echo "== fuzzing $crate $target for ${seconds}s"
    # New inputs go to the corpus (kept locally, ignored by git); fuzz/seeds/ gives a clean
    # clone's 20 s a start from well-formed messages instead of from nothing.
    mkdir -p "fuzz/corpus/$target"
    log="$root/target/fuzz-$target.log"
    if cargo +nightly fuzz run "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" \
        -- -max_total_time="$seconds" -rss_limit_mb=2048 > "$log" 2>&1; then
      passed=$((passed + 1))
      echo "ok - $crate $target: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$log" | tail -1)"
    else
      failed=$((failed + 1))
      echo "FAIL - $crate $target (log: target/fuzz-$target.log)"
      tail -30 "$log"
    fi
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
