"""The proxies under test: weir, HAProxy and nginx, configured from bench/configs/.

A `Variant` is one row of a table: a proxy kind plus its knobs (threads, splice).
Scenarios pick their variants and may pass extra template values (balance
algorithm, per-server options, pool settings) so that the capacity and
resilience scenarios can reuse the same machinery.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

import ghz
from harness import PIN, PROCS, BenchError, Proc, ensure_port_free, wait_port

HOST = "127.0.0.1"
CONFIGS = Path(__file__).resolve().parent.parent / "configs"

# weir's balance names -> HAProxy's / nginx's directive (None = nginx default)
HAPROXY_BALANCE = {"round_robin": "roundrobin", "least_conn": "leastconn", "random": "random"}
NGINX_BALANCE = {"round_robin": None, "least_conn": "least_conn;", "random": "random;"}
# weir serves h2c (prior knowledge) on any http listener: no config of its own
WEIR_TEMPLATE = {"h2c": "http"}


def render(template: str, out: Path, **values) -> Path:
    text = Template((CONFIGS / template).read_text()).safe_substitute(
        {k: str(v) for k, v in values.items()})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out


@dataclass
class Upstream:
    """One upstream endpoint the proxies balance over."""
    port: int
    # per-server options in each proxy's own syntax, e.g. {"haproxy": "maxconn 2"}
    opts: dict = field(default_factory=dict)
    # the process serving it, when the harness may signal it (fake-upstream restarts)
    proc: Proc | None = None

    def with_opts(self, **opts) -> "Upstream":
        return Upstream(self.port, dict(opts), self.proc)

    @property
    def addr(self) -> str:
        return f"{HOST}:{self.port}"


@dataclass
class Variant:
    name: str          # row label: weir, weir-2t, haproxy, nginx, haproxy-nosplice
    kind: str          # weir | haproxy | nginx
    threads: int = 1
    splice: str = "auto"  # haproxy mode tcp only: "force" (splice-request/response), "auto", "off"
    params: dict = field(default_factory=dict)  # scenario-specific (method, cap, ...)
    exe: str | None = None  # weir only: another binary (BENCH_WEIR_BASE)

    @property
    def is_weir(self) -> bool:
        return self.kind == "weir"


@dataclass
class Ctx:
    """What a run needs to know: paths, binaries, ports, options."""
    root: Path
    bin_dir: Path
    out: Path
    run: Path
    port_base: int
    weir_build_error: str | None = None
    nginx_stream_line: str | None = ""  # None: no stream module
    tls_files: dict | None = None  # see tls_pair()

    @property
    def proxy_port(self) -> int:
        return self.port_base

    @property
    def admin_port(self) -> int:
        return self.port_base + 1

    def upstream_port(self, i: int) -> int:
        return self.port_base + 10 + i

    def bin(self, name: str) -> Path:
        return self.bin_dir / name


def tls_pair(ctx: Ctx) -> dict:
    """The run's ECDSA P-256 self-signed pair for bench.test, made once per run in
    the out dir (never committed): CERT, KEY, and CERT_KEY (both in one PEM, for
    HAProxy's `crt`)."""
    if ctx.tls_files:
        return ctx.tls_files
    d = ctx.out / "tls"
    d.mkdir(parents=True, exist_ok=True)
    cert, key, both = d / "cert.pem", d / "key.pem", d / "cert-key.pem"
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-subj", "/CN=bench.test", "-addext", "subjectAltName=DNS:bench.test",
                        "-days", "7", "-keyout", key, "-out", cert], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise BenchError(f"openssl req failed: {r.stderr.strip()[-200:]}")
    both.write_text(cert.read_text() + key.read_text())
    for f in (key, both):
        os.chmod(f, 0o600)
    ctx.tls_files = {"CERT": cert, "KEY": key, "CERT_KEY": both}
    return ctx.tls_files


def nginx_stream_module() -> str | None:
    """The line that loads nginx's stream module, "" if built in, None if absent."""
    mod = Path("/usr/lib/nginx/modules/ngx_stream_module.so")
    if mod.exists():
        return f"load_module {mod};"
    try:
        v = subprocess.run(["nginx", "-V"], capture_output=True, text=True, timeout=10).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    return "" if "--with-stream " in v + " " and "--with-stream=dynamic" not in v else None


def peer_defer() -> bool:
    """BENCH_PEER_DEFER=1: HAProxy and nginx defer accepts on http(s) listeners
    too (`defer-accept`, `deferred`: off by default in both; on by default in
    weir's http listeners)."""
    return os.environ.get("BENCH_PEER_DEFER", "") not in ("", "0")


def start_proxy(ctx: Ctx, v: Variant, protocol: str, upstreams: list[Upstream], tag: str,
                balance: str = "round_robin", pool_extra: str = "", haproxy_backend: str = "",
                nginx_upstream: str = "", nginx_location: str = "") -> Proc:
    """Render the variant's config, start it, wait until it listens. Raises BenchError.

    pool_extra: TOML appended to weir's pool (keys, then sub-tables like [pools.app.health]);
    haproxy_backend: lines appended to HAProxy's backend; nginx_upstream / nginx_location:
    lines appended to nginx's upstream block / proxy location (http only)."""
    listen = f"{HOST}:{ctx.proxy_port}"
    ensure_port_free(HOST, ctx.proxy_port)
    cfg_dir = ctx.out / "configs"
    logs = ctx.out / "logs"
    name = f"{tag}-{v.name}".replace(" ", "_")
    tls = tls_pair(ctx) if protocol == "https" else {}
    if v.kind == "weir":
        if ctx.weir_build_error:
            raise BenchError(ctx.weir_build_error)
        exe = Path(v.exe) if v.exe else ctx.bin("weir")
        if not exe.exists():
            raise BenchError(f"{exe} not found (build failed?)")
        servers = "\n".join(
            f'  {{ addr = "{u.addr}"{(", " + u.opts["weir"]) if u.opts.get("weir") else ""} }},'
            for u in upstreams)
        cfg = render(f"weir-{WEIR_TEMPLATE.get(protocol, protocol)}.toml", cfg_dir / f"{name}.toml", ADMIN=f"{HOST}:{ctx.admin_port}",
                     LISTEN=listen, SERVERS=servers, BALANCE=balance, POOL_EXTRA=pool_extra, **tls)
        ensure_port_free(HOST, ctx.admin_port)
        argv = [exe, "run", "-c", cfg, "--threads", v.threads]
        env = dict(os.environ, RUST_LOG=os.environ.get("BENCH_WEIR_LOG", "warn"))
        p = PROCS.start(name, argv, logs / f"{name}.log", env=env, cpus=PIN.for_proxy(v.threads))
    elif v.kind == "haproxy":
        servers = "\n".join(
            f"    server u{i} {u.addr}" + (f" {u.opts['haproxy']}" if u.opts.get("haproxy") else "")
            for i, u in enumerate(upstreams, 1))
        splice = {"force": "    option splice-request\n    option splice-response",
                  "auto": "    option splice-auto"}.get(v.splice, "")
        cfg = render(f"haproxy-{protocol}.cfg", cfg_dir / f"{name}.cfg", LISTEN=listen, SERVERS=servers,
                     BALANCE=HAPROXY_BALANCE.get(balance, balance), SPLICE=splice,
                     SPLICE_NOTE=v.splice, BACKEND_EXTRA=haproxy_backend, **tls)
        if v.threads != 1:
            text = cfg.read_text().replace("nbthread 1", f"nbthread {v.threads}")
            cfg.write_text(text)
        if protocol in ("http", "https", "h2c", "grpc") and peer_defer():
            cfg.write_text(cfg.read_text().replace(f"bind {listen}", f"bind {listen} defer-accept"))
        p = PROCS.start(name, ["haproxy", "-db", "-f", cfg], logs / f"{name}.log", cpus=PIN.for_proxy(v.threads))
    elif v.kind == "nginx":
        if protocol == "tcp" and ctx.nginx_stream_line is None:
            raise BenchError("nginx has no stream module (install libnginx-mod-stream)")
        nb = NGINX_BALANCE.get(balance)
        servers = "\n".join(
            f"        server {u.addr}" + (f" {u.opts['nginx']}" if u.opts.get("nginx") else "") + ";"
            for u in upstreams)
        if nb:
            servers = f"        {nb}\n" + servers
        cfg = render(f"nginx-{protocol}.conf", cfg_dir / f"{name}.conf", LISTEN=listen, SERVERS=servers,
                     RUN=ctx.run, NAME=name, LOAD_STREAM=ctx.nginx_stream_line or "",
                     UPSTREAM_EXTRA=nginx_upstream, LOCATION_EXTRA=nginx_location, **tls)
        if v.threads != 1:
            text = cfg.read_text().replace("worker_processes 1;", f"worker_processes {v.threads};")
            cfg.write_text(text)
        if protocol in ("http", "https", "h2c", "grpc") and peer_defer():
            cfg.write_text(cfg.read_text().replace("backlog=4096;", "backlog=4096 deferred;"))
        p = PROCS.start(name, ["nginx", "-p", f"{ctx.run}/", "-e", ctx.run / f"{name}.error.log",
                               "-c", cfg, "-g", "daemon off;"], logs / f"{name}.log",
                        cpus=PIN.for_proxy(v.threads))
    else:
        raise BenchError(f"unknown proxy kind {v.kind}")
    try:
        wait_port(p, HOST, ctx.proxy_port)
    except BenchError as e:
        PROCS.stop(p)
        raise BenchError(str(e)) from None
    return p


def start_nginx_upstream(ctx: Ctx, i: int, www: Path) -> Upstream:
    port = ctx.upstream_port(i)
    ensure_port_free(HOST, port)
    name = f"upstream{i}"
    cfg = render("upstream-nginx.conf", ctx.out / "configs" / f"{name}.conf", LISTEN=f"{HOST}:{port}",
                 RUN=ctx.run, NAME=name, WWW=www)
    p = PROCS.start(name, ["nginx", "-p", f"{ctx.run}/", "-e", ctx.run / f"{name}.error.log",
                           "-c", cfg, "-g", "daemon off;"], ctx.out / "logs" / f"{name}.log")
    wait_port(p, HOST, port)
    return Upstream(port)


def start_bench_upstream(ctx: Ctx, i: int, mode: str) -> Upstream:
    """weir-bench sink|echo on an upstream port."""
    port = ctx.upstream_port(i)
    ensure_port_free(HOST, port)
    p = PROCS.start(f"upstream{i}-{mode}", [ctx.bin("weir-bench"), mode, "--listen", f"{HOST}:{port}"],
                    ctx.out / "logs" / f"upstream{i}-{mode}.log")
    wait_port(p, HOST, port)
    return Upstream(port)


def start_fake_upstream(ctx: Ctx, i: int, args: list[str]) -> Upstream:
    """weir-testkit's fake-upstream (HTTP with --latency/--max-concurrency/--idle-close,
    or --tcp-echo), for the capacity and resilience scenarios. The returned Upstream
    carries the process: SIGUSR1 makes it drop everything and come back after
    --down-for, SIGUSR2 restarts it gracefully."""
    port = ctx.upstream_port(i)
    ensure_port_free(HOST, port)
    p = PROCS.start(f"upstream{i}-fake", [ctx.bin("fake-upstream"), "--listen", f"{HOST}:{port}",
                                          "--name", f"u{i}", "--threads", "1", *args],
                    ctx.out / "logs" / f"upstream{i}-fake.log")
    wait_port(p, HOST, port)
    return Upstream(port, proc=p)


def start_grpc_upstream(ctx: Ctx, i: int) -> Upstream:
    """weir-testkit's grpc-upstream (the Echo service over h2c, one runtime thread),
    named u{i}: each reply names the backend that answered. HAProxy needs `proto h2`
    on its server line to speak h2c to it."""
    port = ctx.upstream_port(i)
    ensure_port_free(HOST, port)
    exe = ctx.bin("grpc-upstream")
    if not exe.exists():
        raise BenchError(os.environ.get("BENCH_GRPC_BUILD_ERROR") or f"{exe} not found (build failed?)")
    p = PROCS.start(f"upstream{i}-grpc", [exe, "--listen", f"{HOST}:{port}", "--name", f"u{i}", "--threads", "1"],
                    ctx.out / "logs" / f"upstream{i}-grpc.log")
    wait_port(p, HOST, port)
    return Upstream(port, opts={"haproxy": "proto h2"}, proc=p)


def http_status(port: int, path: str) -> tuple[int, bytes] | None:
    """One GET on loopback, a new connection; None when nothing answers."""
    c = http.client.HTTPConnection(HOST, port, timeout=1)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    except (OSError, http.client.HTTPException):
        return None
    finally:
        c.close()


def wait_answer(p: Proc, port: int, path: str, done, timeout: float = 30.0) -> None:
    """Polls `GET path` until `done(status, body)`; BenchError if `p` exits or the time runs out.
    `p` is checked after each answer too: should its port have been taken, the answer came
    from whoever holds it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = http_status(port, path)
        if not p.alive():
            raise BenchError(p.why_dead())
        if got is not None and done(*got):
            return
        time.sleep(0.02)
    raise BenchError(f"{p.name}: GET {path} on port {port} not ready within {timeout:.0f}s"
                     + (f" ({p.log_tail(2)})" if p.log_tail(2) else ""))


def etcd_healthy(status: int, body: bytes) -> bool:
    try:
        return status == 200 and json.loads(body).get("health") == "true"
    except ValueError:
        return False


def start_etcd(ctx: Ctx, tag: str, client_port: int, peer_port: int, data: Path) -> Proc:
    """One etcd member (Debian's etcd-server, 3.4) on loopback with its defaults (heartbeat,
    election, an fsync of its WAL per commit), data in `data`, log in logs/. Returns once
    `GET /health` says `{"health":"true"}`: etcd answers so only with a leader, i.e. when it
    can commit."""
    exe = shutil.which("etcd")
    if not exe:
        raise BenchError("etcd not found (apt-get install etcd-server)")
    for port in (client_port, peer_port):
        ensure_port_free(HOST, port)
    client, peer = f"http://{HOST}:{client_port}", f"http://{HOST}:{peer_port}"
    argv = [exe, "--name", "m0", "--data-dir", data,
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"m0={peer}", "--initial-cluster-state", "new",
            # unique: a member of another run on a reused port refuses this cluster instead of joining it
            "--initial-cluster-token", f"weir-bench-{os.getpid()}-{tag}",
            # zap, not 3.4's default capnslog (which adds a deprecation warning); stderr, not journald
            "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"]
    # etcd reads every ETCD_* variable as a flag: none of the caller's may leak in.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD_")}
    name = f"{tag}-etcd"
    p = PROCS.start(name, argv, ctx.out / "logs" / f"{name}.log", env=env)
    try:
        wait_answer(p, client_port, "/health", etcd_healthy)
    except BenchError:
        PROCS.stop(p)
        raise
    return p


def start_weir_admin(ctx: Ctx, name: str, args: list, admin_port: int) -> Proc:
    """weir with its config in a store (`args`: `--data DIR` or `--store URL`) and nothing but
    its admin listener to begin with, one worker thread, pinned as a one-thread proxy is.
    Returns once `/readyz` answers 200 (the store read, its config running)."""
    if ctx.weir_build_error:
        raise BenchError(ctx.weir_build_error)
    exe = ctx.bin("weir")
    if not exe.exists():
        raise BenchError(f"{exe} not found (build failed?)")
    ensure_port_free(HOST, admin_port)
    argv = [exe, "run", *args, "--admin", f"{HOST}:{admin_port}", "--threads", 1]
    env = dict(os.environ, RUST_LOG=os.environ.get("BENCH_WEIR_LOG", "warn"))
    p = PROCS.start(name, argv, ctx.out / "logs" / f"{name}.log", env=env, cpus=PIN.for_proxy(1))
    try:
        wait_answer(p, admin_port, "/readyz", lambda status, _body: status == 200)
    except BenchError:
        PROCS.stop(p)
        raise
    return p


def versions(ctx: Ctx) -> dict:
    def first_line(argv):
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            return (r.stdout + r.stderr).strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired, IndexError):
            return "?"
    out = {
        "haproxy": first_line(["haproxy", "-v"]),
        "nginx": first_line(["nginx", "-v"]),
        "wrk": first_line(["wrk", "-v"]),
        "h2load": first_line(["h2load", "--version"]),
        "ghz": ghz.version(),
        "etcd": first_line(["etcd", "--version"]),
    }
    try:
        rev = subprocess.run(["git", "-C", ctx.root, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", ctx.root, "status", "--porcelain", "--", "crates"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        out["weir"] = rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        out["weir"] = "?"
    exe = ctx.bin("weir")
    if exe.exists():
        out["weir"] += " (binary built " + time.strftime("%H:%M", time.localtime(exe.stat().st_mtime)) + ")"
    # The -pgo rows' binary (BENCH_PGO=1), by when it was built: what tells one build of it
    # from the next when runs are pooled (bench/lib/pool.py).
    pgo = Path(os.environ.get("BENCH_WEIR_PGO", "").strip() or "/nonexistent")
    if pgo.is_file():
        out["weir-pgo"] = "release/pgo.sh build of " + time.strftime(
            "%Y-%m-%d %H:%M", time.localtime(pgo.stat().st_mtime))
    out["perf"] = shutil.which("perf") or ""
    return out
