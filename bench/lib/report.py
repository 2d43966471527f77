"""The markdown table: medians per proxy, then weir/peer ratios."""

from __future__ import annotations

import re
import statistics

PEERS = ("haproxy", "nginx")


def deploy_goal_line(sc, med: dict) -> str | None:
    """The scenario's goal judged on the build to deploy (release/pgo.sh, BENCH_PGO=1): the
    same line with each `-pgo` row in place of the plain one it stands beside."""
    pgo = {name[:-len("-pgo")]: m for name, m in med.items() if name.endswith("-pgo")}
    if not pgo:
        return None
    line = sc.goal_line({**med, **pgo})
    if not line:
        return None
    said = "Goal on the build to deploy (release/pgo.sh; the weir rows it names are their -pgo ones)"
    return re.sub(r"^Goal", said, line, count=1)


def esc(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def cell(fmt: str, v) -> str:
    return "–" if v is None else fmt.format(v)


def per_round(res: dict, row: str, base: str, metric: str = "cpu_total") -> list[float]:
    """`row`'s CPU per unit (or another `metric`, e.g. `p99_ms`) ÷ `base`'s, round by round,
    in round order (rounds where both ran): the two ran seconds to a minute apart, so the
    machine's drift between rounds cancels."""
    by_round: dict = {}
    for m in res.get("rounds", []):
        by_round.setdefault(m["round"], {})[m["proxy"]] = m.get(metric)
    return [r[row] / r[base] for _, r in sorted(by_round.items()) if r.get(row) and r.get(base)]


def round_ratios(res: dict, goal, row: str = "weir") -> str | None:
    """weir's CPU ÷ each peer's, round by round: the two ran minutes apart at
    most, so a drift of the machine between rounds cancels here, and the
    spread shows how far one run's ratio can be trusted."""
    if not goal:
        return None
    parts = []
    for peer in goal[1]:
        rs = per_round(res, row, peer)
        if len(rs) > 1:
            parts.append(f"÷ {peer}'s {' '.join(f'{r:.2f}' for r in rs)} (median {statistics.median(rs):.2f})")
    if not parts:
        return None
    return f"Per round, {row}'s CPU " + "; ".join(parts) + "."


def render_markdown(results: dict, scenarios: dict) -> str:
    meta = results["meta"]
    o = meta["options"]
    m = meta["machine"]
    v = meta["versions"]
    own = [n for n in results["scenarios"] if getattr(scenarios.get(n), "own_timing", False)]
    lines = [
        f"Run {meta['date']}: `{meta['command']}`",
        "",
        f"Machine: {m['cpus']} cores ({m['cpu_model']}), Linux {m['kernel']}, shared and noisy "
        f"(load average {m['loadavg_start']} at start): compare within one run, not across runs. "
        f"CPUs: {m.get('pinning', 'not pinned')}.",
        f"weir {v.get('weir', '?')}" + (f" (-pgo rows: {v['weir-pgo']})" if v.get("weir-pgo") else "")
        + f" · {v.get('haproxy', '?')} · {v.get('nginx', '?')} · {v.get('wrk', '?')}"
        + (f" · {v['h2load']}" if v.get("h2load") and any(n.startswith("h2") for n in results["scenarios"]) else "")
        + (f" · {v['ghz']}" if v.get("ghz") and any(n.startswith("grpc") for n in results["scenarios"]) else "")
        + (f" · {v['etcd']}" if v.get("etcd") and any(n.startswith("config") for n in results["scenarios"]) else "")
        + ".",
        (f"Medians of {o['rounds']} round(s) × {o['seconds']} s per proxy"
         + (f" ({', '.join(own)}: rounds and durations in their sections)" if own else "")
         if len(own) < len(results["scenarios"]) else "Rounds and durations in each section")
        + ", proxies alternating; every proxy on one "
        f"thread/worker except weir-2t. CPU = utime+stime of the proxy's processes over the measured window "
        f"÷ requests (connections, GiB). Syscalls: "
        + (f"separate {o['syscall_seconds']} s run per proxy under {meta.get('syscall_method')}."
           if meta.get("syscall_method") else "not measured (BENCH_SYSCALL_SECONDS=0)." if not o["syscall_seconds"]
           else "not measured (no usable perf or strace).")
        + " Ratio rows: weir (1 thread) ÷ peer; below 1 is better for CPU and latency, above 1 for throughput.",
        "",
    ]
    for name, res in results["scenarios"].items():
        sc = scenarios[name]
        lines.append(f"### {name}")
        lines.append("")
        lines.append(res.get("description", sc.describe()))
        lines.append("")
        if res.get("error"):
            lines.append(f"failed: {esc(res['error'])}")
            lines.append("")
            continue
        cols = sc.columns
        lines.append(f"| {getattr(sc, 'row_header', 'proxy')} | " + " | ".join(c.header for c in cols) + " |")
        lines.append("|---|" + "---:|" * len(cols))
        med = res.get("medians", {})
        for pname in res["variants"]:
            if pname in med:
                lines.append(f"| {pname} | " + " | ".join(cell(c.fmt, med[pname].get(c.key)) for c in cols) + " |")
            else:
                reason = res["failed"].get(pname, "no result")
                lines.append(f"| {pname} | failed: {esc(reason[:300])} |" + " |" * (len(cols) - 1))
        compared = getattr(sc, "compared", ("weir",))
        # BENCH_PGO's rows get their ratio rows too, and a goal line of their own after the
        # plain build's.
        compared = [*compared, *(f"{w}-pgo" for w in compared if f"{w}-pgo" in res["variants"])]
        for wname in compared:
            w = med.get(wname)
            for peer in PEERS:
                p = med.get(peer)
                if not w or not p:
                    continue
                row = []
                for c in cols:
                    a, b = w.get(c.key), p.get(c.key)
                    # no ratio when either side is below the measurement's resolution (0)
                    row.append(f"{a / b:.2f}×" if c.ratio and a and b else "")
                lines.append(f"| {wname} / {peer} | " + " | ".join(row) + " |")
        lines.append("")
        notes = sc.notes(res)
        if notes:
            lines.extend(notes)
            lines.append("")
        g = sc.goal_line(med)
        if g:
            lines.append(g)
            lines.append("")
        g = deploy_goal_line(sc, med)
        if g:
            lines.append(g)
            lines.append("")
        for wname in compared:
            spread = round_ratios(res, getattr(sc, "goal", None), wname)
            if spread:
                lines.append(spread)
                lines.append("")
    return "\n".join(lines)
