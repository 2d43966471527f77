#!/usr/bin/env python3
"""README.md's commands, run as a new reader would type them.

Every indented command block of README.md is read from the file (never copied
here) and run verbatim from the repository root:

- the demo command (the first block): it must build and start the balancer
  and the dashboard; every `curl` of the tour runs against it and its answer is
  checked against the comment beside it; the dashboard and the admin paths the
  tour names answer; Ctrl-C (SIGINT to its process group) ends it with exit 0;
- the test command (the second block) must be what `.ci/run` runs (it is what
  runs this script, so it is not run again here);
- a block starting with `$ COMMAND`: the command's output must be exactly the
  lines that follow it;
- `cargo install ...` (Install): run with `--root` into a scratch directory (not the
  reader's ~/.cargo), it must exit 0 and leave a `bin/weir` that runs;
- "Running several replicas": `cargo build --features etcd`, etcd and two weirs in the
  background, a write through one and a read through the other (`check_replicas`);
- the "Without a file" session: each line in turn, in a scratch directory (with
  `target` linked to the real one, `weir` on PATH and a `./my-service` that
  answers on the address it registers); a line ending in `&`, and `weir ctl
  register` (which runs until its command ends), run in the background.

A block this script does not know how to check fails the run, so a README
change that adds a command also has to say here how it is checked.

    python3 tests/readme/run.py

Ends with `N passed, N failed`; exit status 1 if anything failed. Logs go to
target/readme-artifacts/. Environment: README_BUILD_TIMEOUT [1800] seconds for
the demo command to listen (it may have to build weir in release mode first).
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
if not os.path.isabs(TARGET):
    TARGET = os.path.join(ROOT, TARGET)
ARTIFACTS = os.path.join(TARGET, "readme-artifacts")
BUILD_TIMEOUT = float(os.environ.get("README_BUILD_TIMEOUT", "1800"))

passed = 0
failed = 0


def check(ok, name, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok - {name}")
    else:
        failed += 1
        print(f"FAIL - {name}" + (f"\n{detail}" if detail else ""))
    return ok


# ---- reading the README ------------------------------------------------------


class Block:
    def __init__(self, lines, before, line_no):
        self.lines = lines  # without the four-space indent, trailing blank lines removed
        self.before = before  # the paragraph just above the block
        self.line_no = line_no  # 1-based line of README.md where the block starts

    def __repr__(self):
        return f"README.md:{self.line_no}: {self.lines[0]!r}"


def read_blocks(text):
    """Markdown's indented code blocks: four-space lines after a blank line,
    running on across blank lines while indented lines follow."""
    lines = text.split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        starts = lines[i].startswith("    ") and (i == 0 or lines[i - 1].strip() == "")
        if not starts:
            i += 1
            continue
        j = i - 2
        para = []
        while j >= 0 and lines[j].strip() != "":
            para.insert(0, lines[j])
            j -= 1
        start = i
        body = []
        while i < len(lines) and (lines[i].startswith("    ") or lines[i].strip() == ""):
            body.append(lines[i][4:] if lines[i].startswith("    ") else "")
            i += 1
        while body and body[-1] == "":
            body.pop()
        blocks.append(Block(body, " ".join(para), start + 1))
    return blocks


# ---- processes and waiting ---------------------------------------------------


def listening(addr):
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def wait_for(what, cond, proc=None, timeout=60.0):
    """Polls cond() until it holds; fails early when proc has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        if proc is not None and proc.poll() is not None:
            print(f"   ({what}: the process exited with {proc.returncode} first)")
            return False
        time.sleep(0.1)
    print(f"   ({what}: not within {timeout:.0f} s)")
    return False


def shell(cmd, cwd, env=None, timeout=120):
    r = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def background(cmd, cwd, log_name, env=None):
    log = open(os.path.join(ARTIFACTS, log_name), "w")
    # Its own process group, as a shell job is: Ctrl-C goes to the whole group.
    return subprocess.Popen(["bash", "-c", f"exec {cmd}"], cwd=cwd, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def interrupt(proc, timeout=60):
    """Ctrl-C: SIGINT to the job's process group; returns the exit status."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def tail(log_name, n=30):
    try:
        with open(os.path.join(ARTIFACTS, log_name)) as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def http_get(url, host=None, timeout=5):
    req = urllib.request.Request(url)
    if host:
        req.add_header("Host", host)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("content-type", ""), r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("content-type", ""), e.read().decode("utf-8", "replace")
    except OSError as e:
        return None, "", str(e)


# ---- the tour ----------------------------------------------------------------

DEMO_NAME = re.compile(r"\bdemo-\d+\b")


def check_weights(cmd, names, ws):
    """The pool's split so far, from weir's own counts: the demo also sends a
    trickle of its own requests (so the dashboard moves), so the answers one
    client sees are not a whole number of rounds, but round robin keeps every
    endpoint's total within a request or two of its weighted share."""
    if not check(len(ws) == len(names), f"tour: `{cmd}`: the comment names a weight per backend"):
        return
    addr_of = dict(re.findall(r"(demo-\d+) on (\S+)", tail("demo.log", 200)))
    _, _, metrics = http_get("http://127.0.0.1:9901/metrics")
    counts = {}
    for name in names:
        pat = rf'weir_requests_total{{listener="demo",route="",pool="web",endpoint="{re.escape(addr_of.get(name, "?"))}",code="200",reason=""}} (\d+)'
        m = re.search(pat, metrics)
        counts[name] = int(m.group(1)) if m else 0
    n = sum(counts.values())
    share = {name: n * w / sum(ws) for name, w in zip(names, ws)}
    check(n >= 40 and all(abs(counts[k] - share[k]) <= 2 for k in names),
          f"tour: `{cmd}`: the pool splits its requests {':'.join(map(str, ws))}",
          f"   weir_requests_total per backend: {counts}, weighted shares of {n}: {share}")


def check_tour_line(line, demo):
    """One `curl ... # what it shows` line: run it verbatim, check the answer
    against the comment."""
    cmd, _, comment = line.partition("#")
    cmd, comment = cmd.strip(), comment.strip()
    names = DEMO_NAME.findall(comment)
    weights = re.search(r"weights (\d+(?::\d+)+)", comment)
    if names:
        # Backend names: every answer is one of them and each one answers.
        ws = [int(w) for w in weights.group(1).split(":")] if weights else None
        rounds = 10
        answers = {}
        for _ in range((sum(ws) if ws else len(names)) * rounds):
            code, out, err = shell(cmd, ROOT)
            if code != 0:
                check(False, f"tour: `{cmd}` exits 0", err)
                return
            answers[out.strip()] = answers.get(out.strip(), 0) + 1
        check(set(answers) == set(names), f"tour: `{cmd}` answers {', '.join(names)}",
              f"   answers: {answers}")
        if ws:
            check_weights(cmd, names, ws)
    elif "https://" in cmd and "X-Forwarded-Proto: https" in comment:
        code, out, err = shell(cmd, ROOT)
        check(code == 0 and '["x-forwarded-proto","https"]' in out,
              f"tour: `{cmd}` reaches the backend over HTTPS, which sees X-Forwarded-Proto: https",
              f"   exit {code}; output:\n{out}{err}")
    elif "301 to" in comment:
        # A redirect filter: the status line, then the Location the comment names.
        code, out, err = shell(cmd, ROOT)
        want = comment.split("301 to", 1)[1].split(":", 1)[0].strip()
        lines = out.lower().splitlines()
        ok = (code == 0 and lines and lines[0].startswith("http/1.1 301")
              and any(l.startswith("location:") and l.strip().endswith(want) for l in lines)
              and "x-weir-reason: redirected" in out.lower())
        check(ok, f"tour: `{cmd}` is a 301 to {want}, answered by a route filter",
              f"   exit {code}; output:\n{out}{err}")
    elif "X-Forwarded-" in comment:
        code, out, err = shell(cmd, ROOT)
        seen = out.lower()
        missing = [h for h in ("x-forwarded-for", "x-forwarded-proto", "x-forwarded-host")
                   if h not in seen]
        check(code == 0 and not missing, f"tour: `{cmd}` shows what the backend saw, with X-Forwarded-*",
              f"   exit {code}, missing {missing}; output:\n{out}{err}")
    else:
        check(False, f"tour: `{line}`", "   tests/readme/run.py has no check for this tour line; add one")


def check_demo(block, tour, admin_prose):
    cmd = block.lines[0]
    check(len(block.lines) == 1, f"the demo is one command: {block}")
    for addr in ("127.0.0.1:8080", "127.0.0.1:9901"):
        if listening(addr):
            check(False, f"demo: {addr} is free before the demo starts",
                  "   something else listens there; stop it and run again")
            return
    print(f"== {cmd}   (may build weir first; log: {ARTIFACTS}/demo.log)")
    proc = background(cmd, ROOT, "demo.log")
    up = wait_for("the demo's balancer and dashboard",
                  lambda: listening("127.0.0.1:8080") and listening("127.0.0.1:9901"),
                  proc, BUILD_TIMEOUT)
    if not check(up, f"`{cmd}` serves 127.0.0.1:8080 and the dashboard on 127.0.0.1:9901",
                 tail("demo.log")):
        if proc.poll() is None:
            interrupt(proc)
        return
    try:
        for line in tour.lines if tour else []:
            if line.strip():
                check_tour_line(line, proc)
        status, ctype, body = http_get("http://127.0.0.1:9901/")
        check(status == 200 and "text/html" in ctype and "<" in body,
              "the dashboard at http://127.0.0.1:9901/ is a page", f"   {status} {ctype}")
        # The admin paths the tour names (`/metrics`, `/api/v1/stats`, ...).
        paths = re.findall(r"`(/[a-z0-9/]+)`", admin_prose)
        check(len(paths) >= 4, "the tour names the admin listener's paths", f"   found {paths}")
        for p in paths:
            status, ctype, body = http_get("http://127.0.0.1:9901" + p)
            ok = status == 200
            if p == "/metrics":
                ok = ok and "weir_requests_total" in body
            elif p == "/api/v1/stats":
                ok = ok and '"pools"' in body
            check(ok, f"the admin listener serves {p}", f"   {status} {ctype}\n{body[:400]}")
    finally:
        status = interrupt(proc)
        check(status == 0, f"Ctrl-C ends `{cmd}` with exit status 0",
              f"   exit status {status}\n{tail('demo.log')}")


# ---- `$ command` blocks ------------------------------------------------------


def check_transcript(block):
    cmd = block.lines[0][2:]
    want = "\n".join(block.lines[1:]).rstrip()
    code, out, err = shell(cmd, ROOT)
    got = (out + err).rstrip()
    check(got == want, f"`{cmd}` prints what README.md shows",
          f"--- README.md shows:\n{want}\n--- it printed (exit {code}):\n{got}")


def check_install(block):
    """The install command as written, into a scratch --root; the weir it installs runs."""
    root = tempfile.mkdtemp(prefix="weir-readme-install-")
    try:
        for line in block.lines:
            if not line.strip():
                continue
            code, out, err = shell(f"{line} --root {root}", ROOT, timeout=BUILD_TIMEOUT)
            check(code == 0, f"`{line}` exits 0", f"   exit {code}\n{out[-2000:]}{err[-2000:]}")
        weir = os.path.join(root, "bin", "weir")
        code, out, err = shell(f"{weir} version", ROOT) if os.path.exists(weir) else (-1, "", "")
        check(code == 0 and out.startswith("weir "), f"the installed {weir} runs",
              f"   exit {code}\n{out}{err}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ---- "Without a file" ----------------------------------------------------------

MY_SERVICE = """#!/usr/bin/env python3
# The README's ./my-service: answers its own name on the address it was registered with.
import http.server, os, signal, sys
# A well-behaved service: Ctrl-C (passed on by `weir ctl register`) is a clean exit.
signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
addr = os.environ.get("MY_SERVICE_ADDR", "127.0.0.1:9002")
host, port = addr.rsplit(":", 1)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"my-service\\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer((host, int(port)), H).serve_forever()
"""


def check_without_a_file(block):
    scratch = tempfile.mkdtemp(prefix="weir-readme-")
    os.symlink(TARGET, os.path.join(scratch, "target"))
    svc = os.path.join(scratch, "my-service")
    with open(svc, "w") as f:
        f.write(MY_SERVICE)
    os.chmod(svc, 0o755)
    env = dict(os.environ)
    env["PATH"] = os.path.join(TARGET, "release") + os.pathsep + env["PATH"]
    jobs = []  # (command, process)
    try:
        for line in block.lines:
            if not line.strip():
                continue
            if line.endswith("&") or line.startswith("weir ctl register"):
                cmd = line.rstrip("&").strip()
                log = f"job{len(jobs)}.log"
                p = background(cmd, scratch, log, env)
                jobs.append((cmd, p, log))
                if " run " in f" {cmd} ":
                    # A server: what the next line talks to is its admin listener.
                    check(wait_for("the admin listener", lambda: listening("127.0.0.1:9901"), p),
                          f"`{cmd}` starts its admin listener", tail(log))
                elif "register" in cmd:
                    addr = re.search(r"--addr (\S+)", cmd).group(1)
                    pool_route = wait_for(
                        "an answer from the registered command through the listener",
                        lambda: http_get("http://127.0.0.1:8080/")[2] == "my-service\n", p)
                    check(pool_route, f"`{cmd}`: its command ({addr}) answers through the listener",
                          tail(log))
                continue
            code, out, err = shell(line, scratch, env)
            check(code == 0, f"`{line}` exits 0", f"   exit {code}\n{out}{err}")
            if line.startswith("weir ctl listener create"):
                bind = re.search(r"--bind (\S+)", line).group(1)
                check(wait_for("the new listener", lambda: listening(bind)),
                      f"the listener `{line}` creates listens on {bind}")
            if "| weir check -" in line:
                check(re.match(r"^\S+: ok \(", out.strip()) is not None,
                      f"`{line}`: the exported config checks ok", f"   {out}{err}")
    finally:
        # Ctrl-C each job, the newest first (the registration leaves before weir stops).
        for cmd, p, log in reversed(jobs):
            status = interrupt(p)
            check(status == 0, f"Ctrl-C ends `{cmd}` with exit status 0",
                  f"   exit status {status}\n{tail(log)}")
        shutil.rmtree(scratch, ignore_errors=True)


# ---- "Running several replicas" ------------------------------------------------


def check_replicas(block):
    """Each line in turn in a scratch directory: a build, etcd and two weirs in the
    background (each waited for: etcd's client port, each weir's --admin), a write through
    the first replica and a read through the second, which must show it."""
    scratch = tempfile.mkdtemp(prefix="weir-readme-replicas-")
    os.symlink(TARGET, os.path.join(scratch, "target"))
    env = dict(os.environ)
    env["PATH"] = os.path.join(TARGET, "release") + os.pathsep + env["PATH"]
    jobs = []
    out = ""
    try:
        for line in block.lines:
            if not line.strip():
                continue
            if line.startswith("cargo build"):
                # From the repository, as a reader would; the scratch dir links its target.
                code, o, e = shell(line, ROOT, env, timeout=1800)
                check(code == 0, f"`{line}` exits 0", f"   exit {code}\n{o[-2000:]}{e[-2000:]}")
                continue
            if line.endswith("&"):
                cmd = line.rstrip("&").strip()
                log = f"replicas-job{len(jobs)}.log"
                p = background(cmd, scratch, log, env)
                jobs.append((cmd, p, log))
                m = re.search(r"--admin (\S+)", cmd)
                addr = m.group(1) if m else "127.0.0.1:2379"
                check(wait_for(addr, lambda: listening(addr), p),
                      f"`{cmd}` listens on {addr}", tail(log))
                continue
            code, out, err = shell(line, scratch, env)
            check(code == 0, f"`{line}` exits 0", f"   exit {code}\n{out}{err}")
        check(re.search(r"^app\s", out, re.M) is not None,
              "the second replica lists the pool created through the first", f"   {out}")
    finally:
        for cmd, p, log in reversed(jobs):
            status = interrupt(p)
            # etcd ends on SIGINT with its own status; only weir's is promised.
            if "weir run" in cmd:
                check(status == 0, f"Ctrl-C ends `{cmd}` with exit status 0",
                      f"   exit status {status}\n{tail(log)}")
        shutil.rmtree(scratch, ignore_errors=True)


# ---- all of it -----------------------------------------------------------------


def main():
    os.makedirs(ARTIFACTS, exist_ok=True)
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    blocks = read_blocks(text)
    if not check(len(blocks) >= 2, "README.md has the demo and the test command"):
        return
    demo, test_cmd, rest = blocks[0], blocks[1], blocks[2:]

    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]
    check(len(test_cmd.lines) == 1 and ci and ci[-1].endswith(f"exec {test_cmd.lines[0]}"),
          f"the README's test command `{test_cmd.lines[0]}` is what .ci/run runs", f"   .ci/run: {ci}")

    tour = None
    others = []
    for b in rest:
        if all(l.startswith("curl ") for l in b.lines if l.strip()):
            if tour is not None:
                check(False, f"one block of tour curls: {b}")
            tour = b
        else:
            others.append(b)
    m = re.search(r"[^\n]*the same admin listener serves[^\n]*(?:\n[^\n]+)*", text)
    check_demo(demo, tour, m.group(0) if m else "")

    for b in others:
        if b.lines[0].startswith("$ "):
            check_transcript(b)
        elif b.lines[0].startswith("cargo install "):
            check_install(b)
        elif "Without a file" in b.before:
            check_without_a_file(b)
        elif "Two replicas, one etcd" in b.before:
            check_replicas(b)
        else:
            check(False, f"a check for {b}", "   tests/readme/run.py does not know this block; add one")


if __name__ == "__main__":
    try:
        main()
    finally:
        print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
