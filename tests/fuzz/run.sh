#!/usr/bin/env bash
# The cargo-fuzz targets of crates/weir-h1/fuzz (request and response framing: no panic, the same
# framing however the bytes are split), each run for FUZZ_SECONDS [20] with libFuzzer.
# Needs the nightly toolchain (cargo-fuzz's sanitizer flags); installs cargo-fuzz when
# missing, cached outside the repo in ~/.cache/weir-test/cargo-fuzz. The corpus grows in
# crates/weir-h1/fuzz/corpus (ignored by git), from the seeds in crates/weir-h1/fuzz/seeds;
# a crash leaves its input in crates/weir-h1/fuzz/artifacts and fails the run.
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
cd "$root/crates/weir-h1"
passed=0
failed=0
for target in $(cargo +nightly fuzz list); do
  echo "== fuzzing $target for ${seconds}s"
  # New inputs go to the corpus (kept locally, ignored by git); fuzz/seeds/ gives a clean
  # clone's 20 s a start from well-formed messages instead of from nothing.
  mkdir -p "fuzz/corpus/$target"
  if cargo +nightly fuzz run "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" \
      -- -max_total_time="$seconds" -rss_limit_mb=2048 \
      > "$root/target/fuzz-$target.log" 2>&1; then
    passed=$((passed + 1))
    echo "ok - $target: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$root/target/fuzz-$target.log" | tail -1)"
  else
    failed=$((failed + 1))
    echo "FAIL - $target (log: target/fuzz-$target.log)"
    tail -30 "$root/target/fuzz-$target.log"
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
