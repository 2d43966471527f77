#!/usr/bin/env python3
"""Messages written in pieces without TCP_NODELAY, through weir, HAProxy and nginx side by
side (docs/BENCHMARKS.md, "Delayed ACKs").

    bench/acks.py [WEIR] [--requests N]

WEIR defaults to target/release/weir. A backend on this machine answers every request with a
2 KiB body written in two pieces (the head and 1 KiB, then the rest) with Nagle's algorithm
on, as many application servers' sockets are; it reads a request body by its length. Each
proxy (one thread or worker, HTTP/1.1 and keep-alive both ways) stands in front of it, and
two clients ask through each, one request at a time on one kept-alive connection:

- "answer in pieces": GET, TCP_NODELAY on the client;
- "body apart": a POST whose 1000-byte body the client writes after its head, Nagle on.

A third client makes the GETs through weir and HAProxy to an HTTP/2 backend (h2c, Python's
`h2`, Nagle on) that writes each answer's HEADERS and then its DATA: "h2 backend" (nginx
proxies no HTTP/2 to backends but gRPC's).

The table shows the median time per request, the first three of each connection left out
(the kernel holds ACKs back only once a connection has gone request, answer, request). A
peer that waits for a delayed ACK shows ~40 ms or more; one that does not, well under 1 ms.
"""

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BODY = b"x" * 2048
ANSWER = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(BODY) + BODY
SPLIT = ANSWER.index(b"\r\n\r\n") + 4 + 1024
POST_BODY = b"y" * 1000
POST_HEAD = b"POST / HTTP/1.1\r\nhost: acks\r\ncontent-length: %d\r\n\r\n" % len(POST_BODY)
GET = b"GET / HTTP/1.1\r\nhost: acks\r\n\r\n"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_message(sock, buf):
    """One message (head and a body of its Content-Length) off `sock`: (rest of buf)."""
    while b"\r\n\r\n" not in buf:
        d = sock.recv(65536)
        if not d:
            raise EOFError
        buf += d
    head, buf = buf.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(buf) < length:
        d = sock.recv(65536)
        if not d:
            raise EOFError
        buf += d
    return buf[length:]


def backend(listener):
    def serve(c):
        buf = b""
        try:
            while True:
                buf = read_message(c, buf)
                c.sendall(ANSWER[:SPLIT])
                c.sendall(ANSWER[SPLIT:])
        except (EOFError, OSError):
            c.close()

    while True:
        c, _ = listener.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def h2_backend(listener):
    import h2.config
    import h2.connection
    import h2.events

    def serve(c):
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        try:
            c.sendall(conn.data_to_send())
            while True:
                d = c.recv(65536)
                if not d:
                    break
                for ev in conn.receive_data(d):
                    if isinstance(ev, h2.events.StreamEnded):
                        conn.send_headers(ev.stream_id, [(":status", "200"),
                                                         ("content-length", str(len(BODY)))])
                        c.sendall(conn.data_to_send())
                        conn.send_data(ev.stream_id, BODY, end_stream=True)
                c.sendall(conn.data_to_send())
        except OSError:
            pass
        c.close()

    while True:
        c, _ = listener.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def write_config(tmp, name, text):
    """Writes `text` to the file `name` in `tmp`: its path."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def serve_backend(serve):
    """Listens on a free port, `serve` accepting on it in a thread: the port."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
    return listener.getsockname()[1]


def probe(port, pieces, nodelay, n):
    s = socket.create_connection(("127.0.0.1", port))
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times, buf = [], b""
    for i in range(n + 3):
        t = time.monotonic()
        for p in pieces:
            s.sendall(p)
        buf = read_message(s, buf)
        if i >= 3:
            times.append((time.monotonic() - t) * 1000)
    s.close()
    return statistics.median(times)


def wait_port(port):
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listens on {port}")


def main():
    args = sys.argv[1:]
    n = 20
    if "--requests" in args:
        i = args.index("--requests")
        n = int(args[i + 1])
        del args[i : i + 2]
    weir = args[0] if args else "target/release/weir"
    tmp = tempfile.mkdtemp(prefix="weir-acks.")
    upport = serve_backend(backend)
    h2port = serve_backend(h2_backend)

    ports = {name: free_port() for name in ("weir", "haproxy", "nginx")}
    h2ports = {name: free_port() for name in ("weir", "haproxy")}
    procs = []
    cfg = write_config(
        tmp, "weir.toml",
        f'[listeners.web]\nbind = "127.0.0.1:{ports["weir"]}"\npool = "app"\n\n'
        f'[pools.app]\nendpoints = [{{ addr = "127.0.0.1:{upport}" }}]\n\n'
        f'[listeners.h2]\nbind = "127.0.0.1:{h2ports["weir"]}"\npool = "h2"\n\n'
        f'[pools.h2]\nprotocol = "h2c"\nendpoints = [{{ addr = "127.0.0.1:{h2port}" }}]\n'
    )
    procs.append(subprocess.Popen(
        [weir, "run", "-c", cfg, "--threads", "1", "--admin", f"127.0.0.1:{free_port()}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    if shutil.which("haproxy"):
        cfg = write_config(
            tmp, "haproxy.cfg",
            "global\n    nbthread 1\ndefaults\n    mode http\n    timeout connect 5s\n"
            "    timeout client 30s\n    timeout server 30s\n    http-reuse always\n"
            f"frontend f\n    bind 127.0.0.1:{ports['haproxy']}\n    default_backend b\n"
            f"backend b\n    server s1 127.0.0.1:{upport}\n"
            f"frontend f2\n    bind 127.0.0.1:{h2ports['haproxy']}\n    default_backend b2\n"
            f"backend b2\n    server s2 127.0.0.1:{h2port} proto h2\n"
        )
        procs.append(subprocess.Popen(["haproxy", "-db", "-f", cfg],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    else:
        del ports["haproxy"], h2ports["haproxy"]
    if shutil.which("nginx"):
        cfg = write_config(
            tmp, "nginx.conf",
            f"worker_processes 1;\ndaemon off;\npid {tmp}/nginx.pid;\n"
            f"error_log {tmp}/nginx.error.log warn;\nevents {{ worker_connections 1024; }}\n"
            f"http {{\n  access_log off;\n  client_body_temp_path {tmp}; proxy_temp_path {tmp};\n"
            f"  fastcgi_temp_path {tmp}; uwsgi_temp_path {tmp}; scgi_temp_path {tmp};\n"
            f"  upstream b {{ server 127.0.0.1:{upport}; keepalive 16; }}\n"
            f"  server {{ listen 127.0.0.1:{ports['nginx']}; location / {{ proxy_pass http://b;\n"
            '    proxy_http_version 1.1; proxy_set_header Connection ""; } }\n}\n'
        )
        procs.append(subprocess.Popen(["nginx", "-c", cfg],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    else:
        del ports["nginx"]
    try:
        for p in [*ports.values(), *h2ports.values()]:
            wait_port(p)
        print(f"median ms per request, {n} requests each after 3 (backend: two pieces, Nagle on)")
        print(f"{'proxy':10} {'answer in pieces':>17} {'body apart':>11} {'h2 backend':>11}")
        for name, port in ports.items():
            answer = probe(port, [GET], True, n)
            post = probe(port, [POST_HEAD, POST_BODY], False, n)
            h2 = f"{probe(h2ports[name], [GET], True, n):11.2f}" if name in h2ports else f"{'-':>11}"
            print(f"{name:10} {answer:17.2f} {post:11.2f} {h2}")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
