#!/usr/bin/env python3
"""Side-by-side benchmark of weir, HAProxy and nginx. Started by bench/run.sh,
which installs the tools and builds weir first; see bench/README.md.

usage: bench.py [scenario|group ...]      (default: all)

Groups: all (every scenario, the default), perf (http-small, http-large, http-conn,
tcp-stream, tcp-conn), resilience (resilience-flap, resilience-idle, resilience-rolling),
tls (https-small, https-conn, https-resume), h2 (h2-small, grpc-unary), filters
(http-filters, http-gzip), config (config-replicas), paced (http-, h2- and https-rate-1k, -10k,
-30k and -one-conn: fixed rates from an open loop, one connection back to back).

Environment: BENCH_ROUNDS (3), BENCH_SECONDS (10), BENCH_WARMUP (1),
BENCH_SYSCALL_SECONDS (3; 0 skips the syscall pass), BENCH_WRK_THREADS (1),
BENCH_TCP_BYTES (1 GiB), BENCH_TCP_STREAMS (3), BENCH_PROXIES (e.g. "weir,haproxy"), BENCH_PEER_DEFER (0),
BENCH_PIN (1: one-thread proxies on their own CPU, see harness.Pinning), BENCH_PGO (0; 1: weir-pgo rows,
the build of release/pgo.sh), BENCH_PORT_BASE
(18000), BENCH_QUICK=1 (1 round x 3 s, 256 MiB), BENCH_OUT_DIR, BENCH_BIN_DIR.
The capacity and resilience scenarios have their own durations (BENCH_CAPACITY_SECONDS,
20; BENCH_RESILIENCE_SECONDS, 12; quick: 5) and run 1 round unless BENCH_ROUNDS is set.
config-replicas makes BENCH_CONFIG_CHANGES (100) changes per row, 1 round unless BENCH_ROUNDS is set.
"""

from __future__ import annotations

import json
import dataclasses
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

from harness import (PIN, PROCS, BenchError, CpuSnap, SyscallCounter, cpu_delta_us, install_signal_handlers,
                     process_tree, vm_hwm_kib)
from proxies import Ctx, Variant, nginx_stream_module, versions
from report import render_markdown
from scenarios import GROUPS, SCENARIOS, Scenario

ROOT = Path(__file__).resolve().parents[2]


def env_int(name: str, default: int) -> int:
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


def options() -> dict:
    quick = os.environ.get("BENCH_QUICK", "") not in ("", "0")
    return {
        "quick": quick,
        "rounds": env_int("BENCH_ROUNDS", 1 if quick else 3),
        "rounds_set": bool(os.environ.get("BENCH_ROUNDS", "").strip()),
        "seconds": env_int("BENCH_SECONDS", 3 if quick else 10),
        "warmup": env_int("BENCH_WARMUP", 1),
        "syscall_seconds": env_int("BENCH_SYSCALL_SECONDS", 1 if quick else 3),
        "wrk_threads": env_int("BENCH_WRK_THREADS", 1),
        "tcp_bytes": env_int("BENCH_TCP_BYTES", (256 << 20) if quick else (1 << 30)),
        "tcp_streams": env_int("BENCH_TCP_STREAMS", 1 if quick else 3),
        "port_base": env_int("BENCH_PORT_BASE", 18000),
        "proxies": [p for p in os.environ.get("BENCH_PROXIES", "").split(",") if p],
        "pin": os.environ.get("BENCH_PIN", "1") not in ("", "0"),
    }


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ")[0]
    except OSError:
        return "?"


def measure(sc: Scenario, ctx: Ctx, v, upstreams, opts: dict, tag: str, syscalls: bool) -> dict:
    """One run of one proxy: start, check, warm up, measure, stop."""
    seconds = opts["syscall_seconds"] if syscalls else sc.run_seconds()
    p = sc.start(ctx, v, upstreams, tag)
    try:
        sc.check(ctx)
        if opts["warmup"] > 0:
            sc.load(ctx, opts["warmup"], warmup=True)
        pids = process_tree(p.pid)
        load0 = loadavg()
        counter = SyscallCounter(pids, ctx.out / "raw" / f"{tag}-{v.name}-syscalls.txt") if syscalls else None
        if counter:
            counter.__enter__()
        try:
            a = CpuSnap.take(pids)
            m = sc.load(ctx, seconds)
            pids = process_tree(p.pid) if p.alive() else pids
            b = CpuSnap.take(pids)
        finally:
            if counter:
                counter.__exit__(None, None, None)
        if not p.alive():
            raise BenchError(f"died during the load: {p.why_dead()}")
        rss = vm_hwm_kib(pids)
    finally:
        sc.stop(p)
    units = m["units"]
    user, sys_ = cpu_delta_us(a, b)
    k = units * sc.cpu_scale
    m.update({
        "proxy": v.name, "pids": len(pids), "window_s": b.t - a.t, "loadavg": load0,
        "cpu_user_us_total": user, "cpu_sys_us_total": sys_,
        "cpu_user": user / k, "cpu_sys": sys_ / k, "cpu_total": (user + sys_) / k,
        "rss_mib": rss / 1024,
    })
    if counter:
        m["syscalls"] = counter.count
        m["syscall_method"] = SyscallCounter.method
        m["syscalls_per_unit"] = counter.count / units if counter.count is not None else None
    return m


def run_scenario(sc: Scenario, ctx: Ctx, opts: dict) -> dict:
    res = {"name": sc.name, "description": sc.describe(), "rounds": [], "syscall_runs": [], "failed": {}}
    # BENCH_PROXIES names rows ("weir-2t") or proxies ("weir" also selects "weir GET")
    variants = [v for v in sc.variants() if not opts["proxies"] or v.name in opts["proxies"]
                or (" " in v.name and v.kind in opts["proxies"])]
    # A/B within one run: BENCH_WEIR_BASE=/path/to/another/weir adds a row for it.
    base = os.environ.get("BENCH_WEIR_BASE", "").strip()
    if base:
        at = next((i + 1 for i, v in enumerate(variants) if v.name == "weir"), 0)
        variants.insert(at, dataclasses.replace(
            next((v for v in variants if v.name == "weir"), Variant("weir", "weir", 1)),
            name="weir-base", exe=base))
    # BENCH_PGO=1 (run.sh exports the binary): the profile-guided build beside each of the
    # scenario's compared rows that is the plain build (weir-awslc, another build, is not).
    pgo = os.environ.get("BENCH_WEIR_PGO", "").strip()
    if pgo:
        for name in getattr(sc, "compared", ("weir",)):
            at = next((i for i, v in enumerate(variants) if v.name == name and not v.exe), None)
            if at is not None:
                variants.insert(at + 1, dataclasses.replace(variants[at], name=f"{name}-pgo", exe=pgo))
    res["variants"] = [v.name for v in variants]
    log(f"== {sc.name}: {sc.describe()}")
    try:
        upstreams = sc.start_upstreams(ctx)
    except BenchError as e:
        res["error"] = f"upstreams: {e}"
        log(f"   upstreams failed: {e}")
        PROCS.stop_all()
        return res
    try:
        try:
            cal = sc.calibrate(ctx, upstreams)
        except BenchError as e:
            cal = {"error": str(e)}
        if cal:
            res["calibration"] = cal
            log(f"   calibration: {cal.get('summary', cal)}")
        for r in range(sc.rounds()):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for v in order:
                if v.name in res["failed"]:
                    continue
                tag = f"{sc.name}-r{r + 1}"
                try:
                    m = measure(sc, ctx, v, upstreams, opts, tag, syscalls=False)
                except BenchError as e:
                    res["failed"][v.name] = str(e)
                    log(f"   round {r + 1} {v.name:<17} FAILED: {e}")
                    continue
                m["round"] = r + 1
                res["rounds"].append(m)
                log(f"   round {r + 1} {v.name:<17} " + summary(sc, m))
        if opts["syscall_seconds"] > 0 and SyscallCounter.method and sc.syscall_pass:
            for v in variants:
                if v.name in res["failed"]:
                    continue
                try:
                    m = measure(sc, ctx, v, upstreams, opts, f"{sc.name}-sys", syscalls=True)
                except BenchError as e:
                    log(f"   syscalls {v.name:<17} failed: {e}")
                    continue
                res["syscall_runs"].append(m)
                spu = m.get("syscalls_per_unit")
                log(f"   syscalls {v.name:<17} " + (f"{spu:.1f}/{sc.unit} ({SyscallCounter.method})"
                                                      if spu is not None else "n/a"))
    finally:
        PROCS.stop_all()  # upstreams
    res["medians"] = medians(sc, res)
    return res


def summary(sc: Scenario, m: dict) -> str:
    parts = []
    for c in sc.columns:
        if c.key in m and m[c.key] is not None:
            parts.append(f"{c.header}={c.fmt.format(m[c.key])}")
    return " ".join(parts)


def medians(sc: Scenario, res: dict) -> dict:
    out = {}
    for name in res["variants"]:
        rows = [m for m in res["rounds"] if m["proxy"] == name]
        if not rows:
            continue
        med = {}
        for c in list(sc.columns) + list(sc.hidden):
            vals = [m[c.key] for m in rows if m.get(c.key) is not None]
            if vals:
                med[c.key] = (sum(vals) if c.agg == "sum" else min(vals) if c.agg == "min"
                              else statistics.median(vals))
        med["n"] = len(rows)
        sysrun = [m for m in res["syscall_runs"] if m["proxy"] == name]
        if sysrun and sysrun[0].get("syscalls_per_unit") is not None:
            med["syscalls_per_unit"] = sysrun[0]["syscalls_per_unit"]
        out[name] = med
    return out


def machine() -> dict:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "kernel": platform.release(), "loadavg_start": loadavg(),
            "pinning": PIN.describe()}


def main(argv: list[str]) -> int:
    install_signal_handlers()
    opts = options()
    PIN.set_up(opts["pin"])
    names = []
    for n in argv or ["all"]:
        for x in GROUPS.get(n, [n]):
            if x not in names:
                names.append(x)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(SCENARIOS)}; "
              f"groups: {', '.join(GROUPS)}", file=sys.stderr)
        return 2
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(os.environ.get("BENCH_OUT_DIR") or ROOT / "bench" / "out" / stamp)
    out.mkdir(parents=True, exist_ok=True)
    run = out / "run"
    (run / "tmp").mkdir(parents=True, exist_ok=True)
    for d in (out, run, run / "tmp"):
        os.chmod(d, 0o755)
    (out / "raw").mkdir(exist_ok=True)
    ctx = Ctx(root=ROOT, bin_dir=Path(os.environ.get("BENCH_BIN_DIR") or ROOT / "target" / "release"),
              out=out, run=run, port_base=opts["port_base"],
              weir_build_error=os.environ.get("BENCH_WEIR_BUILD_ERROR") or None,
              nginx_stream_line=nginx_stream_module())
    meta = {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "command": os.environ.get("BENCH_COMMAND")
            or "bench/run.sh " + " ".join(argv), "options": opts, "machine": machine(), "versions": versions(ctx),
            "out": str(out)}
    method = SyscallCounter.detect(out / "raw") if opts["syscall_seconds"] > 0 else None
    meta["syscall_method"] = method
    log(f"output: {out}")
    log(f"rounds={opts['rounds']} seconds={opts['seconds']} warmup={opts['warmup']} "
        f"syscalls={'via ' + method if method else 'not counted'} scenarios={' '.join(names)}")
    log(f"cpus: {PIN.describe()}")
    if ctx.weir_build_error:
        log(f"weir: {ctx.weir_build_error}")
    results = {"meta": meta, "scenarios": {}}
    t0 = time.monotonic()
    interrupted = False
    try:
        for n in names:
            sc = SCENARIOS[n](opts)
            try:
                results["scenarios"][n] = run_scenario(sc, ctx, opts)
            except BenchError as e:
                results["scenarios"][n] = {"name": n, "error": str(e)}
                log(f"   {n} failed: {e}")
            (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    except KeyboardInterrupt:
        PROCS.stop_all()
        log("interrupted; stopped every process this run started")
        interrupted = True
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        PROCS.stop_all()
    meta["elapsed_s"] = round(time.monotonic() - t0)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    done = {n: SCENARIOS[n](opts) for n in names if n in results["scenarios"]}
    md = render_markdown(results, done)
    (out / "table.md").write_text(md)
    if not interrupted:
        latest = out.parent / "latest"
        try:
            if latest.is_symlink() or latest.exists():
                latest.unlink()
            latest.symlink_to(out.name)
        except OSError:
            pass
    print()
    print(md)
    log(f"{'interrupted after' if interrupted else 'done in'} {meta['elapsed_s']} s; raw results in "
        f"{out}/results.json, table in {out}/table.md")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
