#!/usr/bin/env python3
"""The admin API's paths against its OpenAPI document, both ways.

    paths.py BASE_URL OPENAPI_JSON

1. The document describes exactly the operations of docs/API.md (the list below),
   and the server serves that very document at /api/v1/openapi.json. With
   $CONTRACT_MODE and/or $CONTRACT_SOURCE set, GET /api/v1/config answers that
   `mode` and `source`.
2. Every operation of the document answers a plausible request with its success
   status (so never 404/405): the resources it needs are created first.
3. The server has no operation the document lacks: on every documented path, the
   methods the document does not list answer 405 with an Allow header.
4. What docs/API.md says that a schema cannot express: a 412 for an existing
   resource names `current_version`, names may contain '.', a transaction
   without changes gets an answer.

Leaves the seed resources behind (pool `app`, listener `web`, route `seed` with filter `seed`, TLS
listener `sec` and its certificate `seed`, from the PEM files named by $CONTRACT_CERT
and $CONTRACT_KEY) for the schemathesis run that follows. Prints `ok - ...` / `FAIL - ...` per case and
ends with `paths: N passed, N failed`; exit status 1 if anything failed. Standard
library only.
"""

import http.client
import json
import os
import socket
import sys
import urllib.parse

# Every operation of docs/API.md (sections Resources, Calls, Leases) and of the admin
# listener (docs/CONFIG.md, [admin]): method, path template.
API_MD_OPERATIONS = {
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/api/v1/stats"),
    ("GET", "/api/v1/stats/history"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/api/v1/config"),
    ("GET", "/api/v1/export"),
    ("POST", "/api/v1/transaction"),
    ("GET", "/api/v1/listeners"),
    ("GET", "/api/v1/routes"),
    ("GET", "/api/v1/pools"),
    ("GET", "/api/v1/pools/{pool}/endpoints"),
    ("GET", "/api/v1/certificates"),
    ("GET", "/api/v1/filters"),
    ("POST", "/api/v1/pools/{pool}/endpoints/{addr}/heartbeat"),
}
for _item in ("/api/v1/listeners/{name}", "/api/v1/routes/{name}", "/api/v1/pools/{name}",
              "/api/v1/pools/{pool}/endpoints/{addr}", "/api/v1/certificates/{name}",
              "/api/v1/filters/{name}"):
    for _m in ("GET", "HEAD", "PUT", "DELETE"):
        API_MD_OPERATIONS.add((_m, _item))

METHODS = ("GET", "HEAD", "PUT", "POST", "DELETE", "PATCH")

passed = 0
failed = 0


def case(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok - {name}")
    else:
        failed += 1
        print(f"FAIL - {name}: {detail}")


class Api:
    def __init__(self, base):
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port

    def call(self, method, path, body=None, headers=None):
        """(status, headers as a lower-cased dict, body bytes)."""
        c = http.client.HTTPConnection(self.host, self.port, timeout=10)
        h = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        c.close()
        return out


def brief(status, body):
    return f"{status} {body[:300].decode(errors='replace')}"


def expect(api, name, method, path, want, body=None, headers=None):
    """One case: `method path` answers `want`. Returns (status, headers, body)."""
    try:
        s, h, b = api.call(method, path, body, headers)
    except OSError as e:
        case(name, False, f"{method} {path}: {e}")
        return None, {}, b""
    case(name, s == want, f"{method} {path}: want {want}, got {brief(s, b)}")
    return s, h, b


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    base, doc_path = sys.argv[1], sys.argv[2]
    api = Api(base)
    with open(doc_path) as f:
        doc = json.load(f)

    # 1. The document's operations are docs/API.md's, and the server serves the document.
    doc_ops = {(m.upper(), p) for p, item in doc["paths"].items() for m in item if m.upper() in METHODS}
    missing = sorted(API_MD_OPERATIONS - doc_ops)
    extra = sorted(doc_ops - API_MD_OPERATIONS)
    case("every operation of docs/API.md is in the document", not missing, f"missing: {missing}")
    case("the document has no operation docs/API.md lacks", not extra, f"extra: {extra}")
    s, h, b = expect(api, "GET /api/v1/openapi.json serves the document", "GET", "/api/v1/openapi.json", 200)
    if s == 200:
        try:
            same = json.loads(b) == doc
        except ValueError:
            same = False
        case("the served document is crates/weir-admin/src/api/openapi.json", same, "it differs")

    # GET /api/v1/config names the store weir runs from: $CONTRACT_MODE and $CONTRACT_SOURCE
    # when set (run.sh sets both).
    want_mode, want_source = os.environ.get("CONTRACT_MODE"), os.environ.get("CONTRACT_SOURCE")
    if want_mode or want_source:
        s, _, b = api.call("GET", "/api/v1/config")
        try:
            got = json.loads(b) if s == 200 else {}
        except ValueError:
            got = {}
        case(f"GET /api/v1/config names the store weir runs from ({want_mode}, {want_source})",
             (not want_mode or got.get("mode") == want_mode)
             and (not want_source or got.get("source") == want_source),
             brief(s, b))

    # 2. Every documented operation answers a plausible request with its success status.
    star = {"If-None-Match": "*"}

    def match(h):
        return {"If-Match": h.get("etag", '"0"')}

    web_port = free_port()
    expect(api, "PUT pool (add)", "PUT", "/api/v1/pools/app", 201, {"balance": "round_robin"}, star)
    expect(api, "PUT endpoint (add)", "PUT", "/api/v1/pools/app/endpoints/127.0.0.1:9", 201, {"weight": 1}, star)
    expect(api, "PUT listener (add)", "PUT", "/api/v1/listeners/web", 201,
           {"bind": f"127.0.0.1:{web_port}", "pool": "app"}, star)
    expect(api, "PUT filter (add)", "PUT", "/api/v1/filters/seed", 201,
           {"kind": "rewrite", "strip_prefix": "/seed"}, star)
    expect(api, "PUT route (add)", "PUT", "/api/v1/routes/seed", 201,
           {"listener": "web", "pool": "app", "path_prefix": "/seed", "filters": ["seed"]}, star)

    # A TLS listener without certificate files and its certificate, in one transaction.
    with open(os.environ["CONTRACT_CERT"]) as f:
        cert_pem = f.read()
    with open(os.environ["CONTRACT_KEY"]) as f:
        key_pem = f.read()
    cert = {"listener": "sec", "cert_pem": cert_pem, "key_pem": key_pem}
    expect(api, "POST transaction (a TLS listener and its certificate)", "POST", "/api/v1/transaction", 200,
           {"changes": [
               {"op": "put", "path": "listeners/sec", "if_none_match": "*",
                "spec": {"bind": f"127.0.0.1:{free_port()}", "pool": "app", "tls": {}}},
               {"op": "put", "path": "certificates/seed", "if_none_match": "*", "spec": dict(cert, default=True)},
           ]})

    for path in ("/healthz", "/readyz", "/metrics", "/api/v1/stats", "/api/v1/stats/history",
                 "/api/v1/stats/history?from=1", "/api/v1/config", "/api/v1/export",
                 "/api/v1/listeners", "/api/v1/routes", "/api/v1/pools", "/api/v1/pools/app/endpoints",
                 "/api/v1/certificates", "/api/v1/filters"):
        s, _, b = expect(api, f"GET {path}", "GET", path, 200)
        # The private key is never read back (docs/API.md, Certificates).
        if path in ("/api/v1/export", "/api/v1/certificates"):
            case(f"GET {path} holds no private key", s == 200 and b"PRIVATE KEY" not in b)
    # A `from` that is not a sample number is refused, naming the parameter.
    s, _, b = expect(api, "GET /api/v1/stats/history?from=soon answers 400", "GET",
                     "/api/v1/stats/history?from=soon", 400)
    case("the 400 names the field from", s == 400 and b'"field":"from"' in b, brief(s, b))

    items = {
        "listener": ("/api/v1/listeners/web", "/api/v1/listeners/tmp",
                     {"bind": f"127.0.0.1:{free_port()}"}),
        "route": ("/api/v1/routes/seed", "/api/v1/routes/tmp",
                  {"listener": "web", "pool": "app", "path_prefix": "/tmp"}),
        "pool": ("/api/v1/pools/app", "/api/v1/pools/tmp", {}),
        "endpoint": ("/api/v1/pools/app/endpoints/127.0.0.1:9", "/api/v1/pools/app/endpoints/127.0.0.1:10",
                     {"weight": 2}),
        "certificate": ("/api/v1/certificates/seed", "/api/v1/certificates/tmp", cert),
        "filter": ("/api/v1/filters/seed", "/api/v1/filters/tmp",
                   {"kind": "ip_deny", "addresses": ["192.0.2.0/24"]}),
    }
    for kind, (path, tmp, tmp_spec) in items.items():
        s, h, b = expect(api, f"GET {kind}", "GET", path, 200)
        spec = json.loads(b) if s == 200 else {}
        if kind == "certificate":
            case("GET certificate holds no key_pem", s == 200 and "key_pem" not in spec, brief(s, b))
            # A PUT sends both PEMs again.
            spec["key_pem"] = key_pem
        expect(api, f"HEAD {kind}", "HEAD", path, 200)
        expect(api, f"PUT {kind} (update)", "PUT", path, 200, spec, match(h))
        _, h2, _ = expect(api, f"PUT {kind} (add, to delete)", "PUT", tmp, 201, tmp_spec, star)
        expect(api, f"DELETE {kind}", "DELETE", tmp, 204, None, match(h2))

    expect(api, "PUT endpoint with a lease, no precondition (register)", "PUT",
           "/api/v1/pools/app/endpoints/127.0.0.2:80", 201, {"weight": 1, "ttl": "1m"})
    expect(api, "POST heartbeat", "POST", "/api/v1/pools/app/endpoints/127.0.0.2:80/heartbeat", 200)
    expect(api, "POST transaction", "POST", "/api/v1/transaction", 200, {"changes": [
        {"op": "put", "path": "pools/txn", "if_none_match": "*", "spec": {"balance": "least_conn"}},
        {"op": "put", "path": "pools/txn/endpoints/10.0.0.1:80", "if_none_match": "*", "spec": {"weight": 10}},
    ]})
    # `[v6]:PORT`, percent-encoded or not, names one endpoint.
    expect(api, "PUT endpoint [::1]:9 (percent-encoded)", "PUT", "/api/v1/pools/app/endpoints/%5B%3A%3A1%5D%3A9", 201,
           {"weight": 1}, star)
    expect(api, "GET endpoint [::1]:9 (not encoded)", "GET", "/api/v1/pools/app/endpoints/[::1]:9", 200)

    # 3. No operation the document lacks: other methods answer 405 with Allow.
    concrete = {"{name}": "app", "{pool}": "app", "{addr}": "127.0.0.1:9"}
    for p, item in doc["paths"].items():
        path = p
        for k, v in concrete.items():
            path = path.replace(k, v)
        if p.startswith("/api/v1/listeners/"):
            path = "/api/v1/listeners/web"
        elif p.startswith("/api/v1/routes/"):
            path = "/api/v1/routes/seed"
        elif p.startswith("/api/v1/certificates/"):
            path = "/api/v1/certificates/seed"
        elif p.startswith("/api/v1/filters/"):
            path = "/api/v1/filters/seed"
        documented = {m.upper() for m in item if m.upper() in METHODS}
        for m in METHODS:
            if m in documented or (m == "HEAD" and "GET" in documented):
                continue  # HEAD goes with GET (RFC 9110 9.3.2)
            try:
                s, h, b = api.call(m, path, {} if m in ("PUT", "POST", "PATCH") else None)
            except OSError as e:
                case(f"{m} {p} is not an operation", False, str(e))
                continue
            allow = {a.strip().upper() for a in h.get("allow", "").split(",") if a.strip()}
            ok = s == 405 and documented <= allow and m not in allow
            # Under /api/v1 every error is problem+json (docs/API.md, Errors).
            ctype = h.get("content-type", "").split(";")[0].strip()
            if p.startswith("/api/v1/") and ctype != "application/problem+json":
                ok = False
            case(f"{m} {p} answers 405 with Allow: {', '.join(sorted(documented))}", ok,
                 f"got {brief(s, b)}, Content-Type: {ctype!r}, Allow: {h.get('allow')!r}")

    # 4. What docs/API.md says that a schema cannot express.
    s, h, b = expect(api, "412 on If-None-Match: * of an existing resource", "PUT", "/api/v1/pools/app", 412,
                     {}, star)
    if s == 412:
        cv = json.loads(b).get("current_version")
        case("that 412 names current_version (the resource exists)", isinstance(cv, int) and cv >= 1,
             f"current_version: {cv!r} in {b[:300].decode(errors='replace')}")
    # Names are [A-Za-z0-9_-]{1,64} (docs/API.md, Resources): the config file's names.
    expect(api, "a name with '_' and '-' can be added", "PUT", "/api/v1/pools/with_under-dash", 201, {}, star)
    expect(api, "a name with '.' is refused", "PUT", "/api/v1/pools/with.dot", 400, {}, star)
    try:
        s, h, b = api.call("POST", "/api/v1/transaction", {"changes": []})
        case("a transaction without changes is answered", s < 500, brief(s, b))
    except OSError as e:
        case("a transaction without changes is answered", False, f"no answer: {e}")

    print(f"paths: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
