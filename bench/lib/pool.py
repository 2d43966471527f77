"""Per-round ratios of two rows pooled over several bench runs, with an interval.

One run's ratio of two rows swings with the machine's other tenants (on this shared 2-core
machine, the same row moves by a tenth from round to round and by more in a disturbed run),
so a bound that the two rows sit near (http-filters' five-filter chain at 1.1 × its route) is
met in some runs and not in others. Pooling the rounds of every run of the same build says
where the ratio is and how sure that is:

    python3 bench/lib/pool.py SCENARIO ROW/BASE [ROW/BASE ...] [--bound X] [--metric M] [RUN_DIR ...]

e.g. `python3 bench/lib/pool.py http-filters weir-chain-pgo/weir-pgo weir-chain/weir --bound 1.1`.
`--metric` pools another column of the rounds than CPU per unit (`cpu_total`), e.g.
`--metric p99_ms` for the tail.
RUN_DIRs default to every run under bench/out that holds the scenario. Pool only runs of the
same build: each run's line names the weir it ran (a changed binary is another sample).

The interval resamples runs, then rounds within each drawn run (a two-level bootstrap): rounds
of one run share its machine, so resampling rounds alone would understate how far a new run
can land.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from report import per_round

OUT = Path(__file__).resolve().parents[1] / "out"
RESAMPLES = 4000


@dataclass
class Run:
    name: str
    weir: str
    ratios: list[float]


def interval(runs: list[list[float]], seed: int = 1, resamples: int = RESAMPLES) -> tuple[float, float]:
    """A 95 % interval for the pooled median: runs drawn with replacement, then rounds within
    each drawn run. Seeded, so the same runs give the same interval."""
    rng = random.Random(seed)
    meds = []
    for _ in range(resamples):
        pooled: list[float] = []
        for run in rng.choices(runs, k=len(runs)):
            pooled += rng.choices(run, k=len(run))
        meds.append(statistics.median(pooled))
    meds.sort()
    return meds[int(0.025 * resamples)], meds[int(0.975 * resamples) - 1]


def verdict(lo: float, hi: float, bound: float) -> str:
    if hi <= bound:
        return f"at or under {bound:g} with 95 % confidence (the interval's upper end is)"
    if lo > bound:
        return f"over {bound:g} with 95 % confidence (the interval's lower end is)"
    return f"not decided at {bound:g}: the interval holds it"


def report(runs: list[Run], row: str, base: str, bound: float | None,
           metric: str = "cpu_total") -> list[str]:
    used = [r for r in runs if r.ratios]
    if not used:
        return [f"{row} ÷ {base}: no run has both rows."]
    pooled = [x for r in used for x in r.ratios]
    what = "CPU" if metric == "cpu_total" else metric
    lines = [f"{row}'s {what} ÷ {base}'s, per round, pooled over {len(used)} run(s), {len(pooled)} rounds:"]
    for r in used:
        lines.append(f"  {r.name}  weir {r.weir}  {len(r.ratios)} rounds, median {statistics.median(r.ratios):.3f}")
    med = statistics.median(pooled)
    line = f"  pooled median {med:.3f}"
    if len(used) >= 2:
        lo, hi = interval([r.ratios for r in used])
        line += f", 95 % interval {lo:.3f}-{hi:.3f} (runs, then rounds, resampled {RESAMPLES} times)"
        if bound is not None:
            line += f"; {verdict(lo, hi, bound)}"
    else:
        line += " (one run: no interval)"
    if bound is not None:
        share = sum(x <= bound for x in pooled) / len(pooled)
        line += f"; {100 * share:.0f} % of rounds at or under {bound:g}"
    lines.append(line + ".")
    return lines


def which(versions: dict, row: str) -> str:
    """The weir a row ran: a -pgo row's binary is release/pgo.sh's, named by its build time
    (runs before that was recorded say only the commit of the plain one)."""
    plain = versions.get("weir", "?")
    if row.endswith("-pgo"):
        return versions.get("weir-pgo") or f"release/pgo.sh build (not recorded; plain: {plain})"
    return plain


def load(scenario: str, dirs: list[Path]) -> list[tuple[str, dict, dict]]:
    """Each run's directory name, the versions it recorded, and the scenario's results."""
    found = []
    for d in dirs:
        try:
            j = json.loads((d / "results.json").read_text())
        except (OSError, ValueError):
            continue
        res = j.get("scenarios", {}).get(scenario)
        if res:
            found.append((d.name, j.get("meta", {}).get("versions", {}), res))
    return found


def main(argv: list[str]) -> int:
    args, bound, metric = [], None, "cpu_total"
    it = iter(argv)
    try:
        for a in it:
            if a == "--bound":
                bound = float(next(it))
            elif a == "--metric":
                metric = next(it)
            else:
                args.append(a)
    except (StopIteration, ValueError):
        print("--bound takes a number (e.g. --bound 1.1), --metric a column (e.g. --metric p99_ms)",
              file=sys.stderr)
        return 2
    if len(args) < 2 or "/" not in args[1]:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    scenario = args[0]
    pairs = [a.split("/", 1) for a in args[1:] if "/" in a and not Path(a).is_dir()]
    dirs = [Path(a) for a in args[1:] if Path(a).is_dir()]
    if not dirs:
        dirs = sorted(p for p in OUT.iterdir() if p.is_dir() and not p.is_symlink()) if OUT.is_dir() else []
    found = load(scenario, dirs)
    if not found:
        print(f"no run of {scenario} in {len(dirs)} director(ies)", file=sys.stderr)
        return 1
    for row, base in pairs:
        runs = [Run(name, which(versions, row), per_round(res, row, base, metric))
                for name, versions, res in found]
        print("\n".join(report(runs, row, base, bound, metric)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
