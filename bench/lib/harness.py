"""Process control and measurement for the benchmark harness.

Everything here is loopback-only and bounded in time. Children are started in
their own session (process group) and registered, so `Procs.stop_all()` (run
from `finally`, atexit and the signal handlers) ends exactly the processes the
harness started, and nothing else.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    """A step failed; the message is the reason shown in the table."""


# --------------------------------------------------------------------------
# processes


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(line.strip() for line in text[-lines:])

    def why_dead(self) -> str:
        rc = self.popen.poll()
        tail = self.log_tail(3)
        what = f"{self.name} exited with code {rc}" if rc is not None else f"{self.name} is running"
        return f"{what}: {tail}" if tail else what


def _child_setup(cpus: set[int] | None, no_thp: bool) -> None:
    """In the child before exec: its CPUs and, when asked, no transparent huge pages
    (PR_SET_THP_DISABLE, kept across exec)."""
    if cpus:
        os.sched_setaffinity(0, cpus)
    if no_thp:
        import ctypes
        if ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_THP_DISABLE)")


class Procs:
    """Registry of every child process the harness started."""

    def __init__(self) -> None:
        self._procs: list[Proc] = []
        # Set by the memory scenarios: processes start with transparent huge pages off, so
        # a resident set grows by 4 KiB pages, not 2 MiB ones (mimalloc's arena gets huge
        # pages, and one more of them is 0.7 KiB per connection over 3,000 connections).
        self.no_thp = False

    def start(self, name: str, argv: list[str], log: Path, cwd: Path | None = None,
              env: dict | None = None, cpus: set[int] | None = None) -> Proc:
        log.parent.mkdir(parents=True, exist_ok=True)
        fh = open(log, "ab")
        fh.write(f"\n### {time.strftime('%H:%M:%S')} {' '.join(map(str, argv))}\n".encode())
        fh.flush()
        try:
            popen = subprocess.Popen(
                [str(a) for a in argv], stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=cwd, env=env, start_new_session=True,
                preexec_fn=lambda: _child_setup(cpus, self.no_thp))
        except OSError as e:
            raise BenchError(f"cannot start {name}: {e}") from e
        finally:
            fh.close()
        p = Proc(name, popen, log)
        self._procs.append(p)
        return p

    def stop(self, p: Proc, sig: int = signal.SIGTERM, grace: float = 5.0) -> None:
        if p.alive():
            try:
                os.killpg(p.pid, sig)  # its own process group: the proxy and its workers
            except ProcessLookupError:
                pass
            try:
                p.popen.wait(grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.popen.wait(5)
        else:
            # the leader is gone; make sure no worker of its group survived
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if p in self._procs:
            self._procs.remove(p)

    def stop_all(self) -> None:
        for p in list(reversed(self._procs)):
            try:
                self.stop(p, grace=3.0)
            except Exception:  # noqa: BLE001 - cleanup must go on
                pass


PROCS = Procs()


class Pinning:
    """Where processes run. With BENCH_PIN on (the default, given two CPUs or
    more) a one-thread proxy has the last CPU to itself and everything else
    (upstreams, load generators, this harness) shares the others, as a proxy
    host would be apart from its clients and backends. Unpinned, the scheduler
    moves the proxy next to wrk or an upstream from one moment to the next, and
    the kernel's share of a request (wakeups across CPUs, preemption) swings by
    a third between identical runs."""

    def __init__(self) -> None:
        self.proxy: set[int] | None = None
        self.rest: set[int] | None = None

    def set_up(self, enabled: bool) -> None:
        cpus = sorted(os.sched_getaffinity(0))
        if not enabled or len(cpus) < 2:
            return
        self.proxy, self.rest = {cpus[-1]}, set(cpus[:-1])
        os.sched_setaffinity(0, self.rest)  # inherited by every later child

    def for_proxy(self, threads: int) -> set[int] | None:
        """A one-thread proxy's CPU; a multi-thread one may use all of them."""
        if self.proxy is None:
            return None
        return set(self.proxy) if threads == 1 else self.proxy | self.rest

    def describe(self) -> str:
        if self.proxy is None:
            return "not pinned"
        return (f"one-thread proxies pinned to CPU {min(self.proxy)}, upstreams and load generators "
                f"to CPU {','.join(map(str, sorted(self.rest)))}")


PIN = Pinning()


def install_signal_handlers() -> None:
    def handler(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, handler)


# --------------------------------------------------------------------------
# readiness


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_port(p: Proc, host: str, port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not p.alive():
            raise BenchError(p.why_dead())
        if port_open(host, port):
            return
        time.sleep(0.05)
    raise BenchError(f"{p.name} did not listen on {host}:{port} within {timeout:.0f}s"
                     + (f" ({p.log_tail(2)})" if p.log_tail(2) else ""))


def ensure_port_free(host: str, port: int) -> None:
    if port_open(host, port):
        raise BenchError(f"port {host}:{port} is already in use (set BENCH_PORT_BASE)")


# --------------------------------------------------------------------------
# /proc measurements


def _ppid_map() -> dict[int, int]:
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                s = f.read().decode(errors="replace")
        except OSError:
            continue
        rest = s[s.rfind(")") + 2:].split()
        out[int(d)] = int(rest[1])
    return out


def process_tree(root: int) -> list[int]:
    """root and all its descendants (nginx master + workers, etc.)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _ppid_map().items():
        children.setdefault(ppid, []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def cpu_ticks(pid: int) -> tuple[int, int] | None:
    """(utime, stime) in clock ticks, all threads of the process included."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            s = f.read().decode(errors="replace")
    except OSError:
        return None
    rest = s[s.rfind(")") + 2:].split()
    # rest[0] is field 3 (state); utime is field 14, stime field 15
    return int(rest[11]), int(rest[12])


@dataclass
class CpuSnap:
    ticks: dict[int, tuple[int, int]] = field(default_factory=dict)
    t: float = 0.0

    @classmethod
    def take(cls, pids: list[int]) -> "CpuSnap":
        snap = cls(t=time.monotonic())
        for pid in pids:
            v = cpu_ticks(pid)
            if v is not None:
                snap.ticks[pid] = v
        return snap


def cpu_delta_us(a: CpuSnap, b: CpuSnap) -> tuple[float, float]:
    """(user µs, sys µs) spent between two snapshots, summed over processes."""
    du = ds = 0
    for pid, (u1, s1) in b.ticks.items():
        u0, s0 = a.ticks.get(pid, (0, 0))
        du += u1 - u0
        ds += s1 - s0
    k = 1e6 / CLK_TCK
    return du * k, ds * k


def vm_hwm_kib(pids: list[int]) -> int:
    """Peak RSS (VmHWM), summed over the processes (shared pages count once per process)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


# --------------------------------------------------------------------------
# syscall counting (optional)


class SyscallCounter:
    """Counts system calls of a set of pids with `perf stat -e raw_syscalls:sys_enter`,
    or `strace -c -f` when perf cannot. Usable as a context manager; `.count` is None
    when neither works."""

    method: str | None = None  # decided once per harness run

    def __init__(self, pids: list[int], out: Path):
        self.pids = pids
        self.out = out
        self.proc: Proc | None = None
        self.count: int | None = None

    @classmethod
    def detect(cls, workdir: Path) -> str | None:
        if cls.method is not None:
            return cls.method or None
        cls.method = ""
        busy = subprocess.Popen(
            ["python3", "-c", "import os,time\nt=time.time()\nwhile time.time()-t<3: os.getppid()"],
            start_new_session=True)
        try:
            time.sleep(0.2)
            for m in ("perf", "strace"):
                c = cls([busy.pid], workdir / f"syscall-probe-{m}.txt")
                try:
                    c._start(m)
                    time.sleep(0.5)
                    c._stop(m)
                except BenchError:
                    continue
                if c.count:
                    cls.method = m
                    break
        finally:
            busy.kill()
            busy.wait()
        return cls.method or None

    def _start(self, method: str) -> None:
        pids = ",".join(map(str, self.pids))
        if method == "perf":
            argv = ["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-o", self.out, "-p", pids]
        else:
            argv = ["strace", "-c", "-f", "-q", "-o", self.out] + [x for p in self.pids for x in ("-p", str(p))]
        try:
            self.proc = PROCS.start(f"{method}-syscalls", argv, self.out.with_suffix(".log"))
        except BenchError:
            raise
        time.sleep(0.3)  # attach
        if not self.proc.alive():
            raise BenchError(self.proc.why_dead())

    def _stop(self, method: str) -> None:
        assert self.proc is not None
        PROCS.stop(self.proc, sig=signal.SIGINT, grace=10.0)
        try:
            text = self.out.read_text(errors="replace")
        except OSError:
            return
        if method == "perf":
            for line in text.splitlines():
                parts = line.split(",")
                if len(parts) > 2 and "raw_syscalls:sys_enter" in line:
                    try:
                        self.count = int(float(parts[0]))
                    except ValueError:
                        pass
        else:
            for line in text.splitlines():
                parts = line.split()
                if parts and parts[-1] == "total":
                    # % time, seconds, usecs/call, calls, [errors], total
                    nums = [p for p in parts[:-1]]
                    try:
                        self.count = int(nums[3])
                    except (IndexError, ValueError):
                        pass

    def __enter__(self):
        if self.method:
            self._start(self.method)
        return self

    def __exit__(self, *exc):
        if self.method and self.proc is not None:
            self._stop(self.method)
        return False
