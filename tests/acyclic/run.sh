#!/usr/bin/env bash
# Checks that no crate of the workspace has a dependency cycle between its own files
# (modules): every `use`, type, expression or macro path from one module to another is an
# edge, and a loop of edges fails the check. The tool is crawk (a syntactic module graph
# of each crate, `crawk check` with tests/acyclic/crawk.toml), pinned below and installed
# when missing into a cache outside the repo. Prints each cycle (its edges and the files
# of its modules) and exits 1 when one is found.
#
#   tests/acyclic/run.sh              every workspace crate but those allowed below
#   tests/acyclic/run.sh weir-config  the named crates
#
# Ends with `N passed, N failed, N skipped` (one per crate).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
config="$here/crawk.toml"

# Crates left out of the check, with why and until when.
ALLOW=(
)

CRAWK_VERSION=0.7.1
TOOLS="${WEIR_TOOLS_DIR:-$HOME/.cache/weir-tools}"
crawk="$TOOLS/crawk/bin/crawk"
if ! "$crawk" --version 2>/dev/null | grep -q "^crawk $CRAWK_VERSION "; then
  echo "== installing crawk $CRAWK_VERSION into $TOOLS/crawk"
  # crawk's build script needs rustc 1.96 or later: take nightly when stable is older.
  toolchain=()
  minor=$(rustc --version | sed -E 's/^rustc 1\.([0-9]+).*/\1/')
  if [ "${minor:-0}" -lt 96 ] && cargo +nightly --version >/dev/null 2>&1; then
    toolchain=(+nightly)
  fi
  if ! cargo "${toolchain[@]}" install -q --locked --version "$CRAWK_VERSION" --root "$TOOLS/crawk" crawk; then
    echo "FAIL - cannot install crawk $CRAWK_VERSION (needs rustc >= 1.96)"
    echo "0 passed, 1 failed"
    exit 1
  fi
fi

# Every workspace crate and its directory, from cargo.
declare -A dirs
while read -r name dir; do
  dirs[$name]=$dir
done < <(cd "$root" && cargo metadata -q --no-deps --format-version 1 | python3 -c '
import json, os, sys
for p in json.load(sys.stdin)["packages"]:
    print(p["name"], os.path.dirname(p["manifest_path"]))')
if (($#)); then
  crates=("$@")
else
  mapfile -t crates < <(printf '%s\n' "${!dirs[@]}" | sort)
fi

passed=0
failed=0
skipped=0
for crate in "${crates[@]}"; do
  dir="${dirs[$crate]:-}"
  if [ -z "$dir" ]; then
    echo "FAIL $crate: not a crate of this workspace"
    failed=$((failed + 1))
    continue
  fi
  if [[ " ${ALLOW[*]} " == *" $crate "* ]] && (($# == 0)); then
    if "$crawk" -p "$dir" check -c "$config" >/dev/null 2>&1; then
      echo "-- $crate: skipped (allowed above), and it has no cycle now: take it off the list"
    else
      echo "-- $crate: skipped (allowed above)"
    fi
    skipped=$((skipped + 1))
    continue
  fi
  out="$("$crawk" -p "$dir" check -c "$config" -a 2>&1)"
  case $? in
    0)
      echo "ok $crate: no cycle between its files"
      passed=$((passed + 1))
      continue
      ;;
    1) echo "FAIL $crate: its files form a cycle" ;;
    *) echo "FAIL $crate: crawk could not check it" ;;
  esac
  failed=$((failed + 1))
  echo "$out" | sed 's/^/  /'
  # The files of each cycle's modules, from crawk's module -> file list.
  files="$("$crawk" -p "$dir" list -s 2>/dev/null)"
  echo "$out" | grep -o 'cycle: [^)]*' | sort -u | while read -r _ mods; do
    echo "  files of the cycle:"
    for m in ${mods//,/ }; do
      echo "$files" | awk -v m="$m" -v d="${dir#"$root"/}/" '$1 == m { print "    " d $2 }'
    done
  done
done
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
