#!/usr/bin/env python3
"""Hostile HTTP clients against a running `medtrust serve` on loopback
(issue 16, items 1 to 4). Usage: http_hostile.py PORT PID CASE...
Each case prints "ok - ..." or "not ok - ..." (TAP lines for lib.sh)."""
import json
import socket
import sys
import time

PORT, PID = int(sys.argv[1]), int(sys.argv[2])
HOST = "127.0.0.1"


def conn(src=None, timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if src:
        s.bind((src, 0))
    s.connect((HOST, PORT))
    return s


def read_all(s, limit=10.0):
    """Everything until EOF; (data, closed, seconds)."""
    t0, out = time.time(), b""
    while time.time() - t0 < limit:
        try:
            b = s.recv(65536)
        except socket.timeout:
            return out, False, time.time() - t0
        except ConnectionResetError:
            return out, True, time.time() - t0
        if not b:
            return out, True, time.time() - t0
        out += b
    return out, False, time.time() - t0


def raw(data, limit=10.0):
    s = conn(timeout=limit)
    s.sendall(data)
    r = read_all(s, limit)
    s.close()
    return r


def status(data):
    try:
        return int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def report(ok, name, detail=""):
    print(("ok - " if ok else "not ok - ") + name)
    if not ok and detail:
        print("# " + str(detail)[:400])


def rss_kb():
    for line in open("/proc/%d/status" % PID):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def login():
    """A session cookie and CSRF token for alice."""
    body = json.dumps({"username": "alice", "password": "alice-password"})
    req = ("POST /v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: "
           "application/json\r\nContent-Length: %d\r\nConnection: close"
           "\r\n\r\n%s" % (len(body), body)).encode()
    out, _, _ = raw(req)
    head, _, rest = out.partition(b"\r\n\r\n")
    cookie = [l.split(b":", 1)[1].split(b";")[0].strip()
              for l in head.split(b"\r\n") if l.lower().startswith(b"set-cookie")]
    return cookie[0].decode(), json.loads(rest)["csrf_token"]


HEALTH = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"


def case_smuggle():
    tests = {
        "Content-Length with Transfer-Encoding":
            b"POST /v1/login HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + HEALTH,
        "two different Content-Length headers":
            b"POST /v1/login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
            b"Content-Length: 40\r\n\r\n{}" + HEALTH,
    }
    for name, req in tests.items():
        out, closed, t = raw(req)
        ok = status(out) == 400 and closed and out.count(b"HTTP/1.1 ") == 1
        report(ok, "smuggling, %s: 400, closed, no second request" % name,
               (closed, t, out[:200]))


def case_hang():
    url = b"/v1/health?" + b"&".join(b"a%d=1" % i for i in range(500))
    out, closed, t = raw(b"GET " + url + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    report(status(out) == 431 and closed and t < 5,
           "500 query arguments: 431 and close at once", (closed, t, out[:100]))
    out, closed, t = raw(b"POST /v1/login HTTP/1.1\r\nHost: x\r\n"
                         b"Transfer-Encoding: gzip\r\n\r\nabc")
    report(status(out) == 501 and closed and t < 5,
           "an unknown Transfer-Encoding: 501 and close at once",
           (closed, t, out[:100]))


def case_body():
    # 413 from Content-Length alone, before a byte of the body
    out, closed, t = raw(b"POST /v1/login HTTP/1.1\r\nHost: x\r\nContent-Type:"
                         b" application/json\r\nContent-Length: 1000000\r\n\r\n")
    report(status(out) == 413 and closed and t < 5,
           "a login body over its route's limit is 413 from Content-Length",
           (closed, t, out[:100]))
    # unauthenticated: refused on the headers, the body never read
    out, closed, t = raw(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type:"
                         b" application/json\r\nContent-Length: 7000000\r\n\r\n")
    report(status(out) == 401 and closed and t < 5,
           "an unauthenticated 7 MB check is 401 before its body", out[:100])
    # authenticated chunked body past the route's limit: 413, bounded
    cookie, csrf = login()
    s = conn(timeout=20)
    s.sendall(("POST /v1/search HTTP/1.1\r\nHost: x\r\nCookie: %s\r\n"
               "X-CSRF-Token: %s\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n" % (cookie, csrf)).encode())
    chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
    try:
        for _ in range(32):  # 2 MiB against a 64 KiB limit
            s.sendall(chunk)
        s.sendall(b"0\r\n\r\n")
    except OSError:
        pass
    out, _, _ = read_all(s, 20)
    s.close()
    report(status(out) == 413, "a 2 MiB chunked search body is 413", out[:100])


def case_rss():
    """32 unauthenticated connections each sending 7 MB."""
    before = rss_kb()
    socks = []
    body = b"x" * (7 << 20)
    for _ in range(32):
        s = conn(timeout=10)
        s.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: "
                  b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
        socks.append(s)
    for s in socks:
        try:
            s.sendall(body)
        except OSError:
            pass  # the server refused and closed: the point
    time.sleep(0.5)
    peak = rss_kb()
    for s in socks:
        s.close()
    grew = (peak - before) / 1024
    print("# RSS %d MB before, %d MB after 32 x 7 MB unauthenticated bodies"
          % (before // 1024, peak // 1024))
    report(grew < 48, "32 x 7 MB unauthenticated bodies raise RSS by %.0f MB "
           "(< 48)" % grew)


def case_cap(cap):
    held = [conn() for _ in range(cap)]
    time.sleep(0.3)
    extra = conn()
    try:
        extra.sendall(HEALTH)
    except OSError:
        pass
    out, closed, _ = read_all(extra, 3)
    report(closed and not out,
           "connection %d from one address is refused (cap %d)" % (cap + 1, cap),
           out[:100])
    other = conn(src="127.0.0.2")
    other.sendall(HEALTH)
    out, _, _ = read_all(other, 3)
    report(status(out) == 200,
           "another address is still served while one holds its cap",
           out[:100])
    for s in held + [extra, other]:
        s.close()


def case_trickle(deadline):
    s = conn(timeout=1)
    t0, closed = time.time(), False
    req = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 200
    for i in range(len(req)):  # a byte every 0.4 s: 80 s in all
        try:
            s.sendall(req[i:i + 1])
        except OSError:
            closed = True
            break
        try:
            if s.recv(1024) == b"":
                closed = True
                break
        except socket.timeout:
            pass
        if time.time() - t0 > deadline + 6:
            break
    t = time.time() - t0
    s.close()
    report(closed and deadline - 0.5 <= t <= deadline + 3,
           "trickled headers are cut at the %d s deadline (%.1f s)"
           % (deadline, t), (closed, t))


def post_login(password, ctype="application/json", origin=None):
    body = json.dumps({"username": "alice", "password": password})
    h = "Content-Type: %s\r\n" % ctype
    if origin:
        h += "Origin: %s\r\n" % origin
    out, _, _ = raw(("POST /v1/login HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s"
                     "Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                     % (PORT, h, len(body), body)).encode())
    head = out.split(b"\r\n\r\n")[0].lower()
    retry = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
             if l.startswith(b"retry-after:")]
    return status(out), (retry or [0])[0]


def case_csrf():
    foreign = "http://evil.example"
    st, _ = post_login("alice-password", "text/plain", foreign)
    report(st == 415, "login as text/plain from a foreign Origin is 415", st)
    st, _ = post_login("alice-password", "application/json", foreign)
    report(st == 403, "login as JSON from a foreign Origin is 403", st)
    st, _ = post_login("alice-password", "application/json",
                       "http://127.0.0.1:%d" % PORT)
    report(st == 200, "login as JSON from the same origin works", st)
    st, _ = post_login("alice-password", "application/json; charset=utf-8")
    report(st == 200, "login as JSON without an Origin works", st)


def case_guess(fails):
    """'fails' wrong passwords lock; the owner gets in after the lock."""
    codes = [post_login("wrong-%d" % i)[0] for i in range(fails)]
    st, retry = post_login("alice-password")
    report(codes == [401] * fails and st == 429 and retry >= 1,
           "%d wrong passwords lock the account: even the right one is 429 "
           "with Retry-After" % fails, (codes, st, retry))
    time.sleep(retry + 0.2)
    st, _ = post_login("alice-password")
    report(st == 200, "the owner logs in once the lock has expired", st)
    for i in range(fails):
        post_login("again-%d" % i)
    st1, r1 = post_login("x")
    time.sleep(r1 + 0.2)
    st2, r2 = post_login("y")  # a failure after a lock: it doubles
    st3, r3 = post_login("z")
    report(st1 == 429 and st2 == 401 and st3 == 429 and r3 > r1,
           "each failure after a lock doubles it (%d s, then %d s)" % (r1, r3),
           (st1, r1, st2, r2, st3, r3))
    time.sleep(r3 + 0.2)


def api(method, path, body=None, bearer=None, cookie=None, csrf=None):
    h = "Host: x\r\nConnection: close\r\n"
    if bearer:
        h += "Authorization: Bearer %s\r\n" % bearer
    if cookie:
        h += "Cookie: %s\r\nX-CSRF-Token: %s\r\n" % (cookie, csrf)
    b = json.dumps(body) if body is not None else ""
    if body is not None:
        h += "Content-Type: application/json\r\n"
    out, _, _ = raw(("%s %s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s"
                     % (method, path, h, len(b), b)).encode())
    rest = out.partition(b"\r\n\r\n")[2]
    try:
        return status(out), json.loads(rest)
    except ValueError:
        return status(out), {}


def case_tokens():
    """Item 7: token expiry, logout with a token, passwd --revoke-tokens."""
    import os
    import subprocess
    cookie, csrf = login()
    st, t = api("POST", "/v1/tokens", {"name": "short", "expires_in_s": 2},
                cookie=cookie, csrf=csrf)
    st2, _ = api("GET", "/v1/me", bearer=t.get("token"))
    time.sleep(3.2)
    st3, _ = api("GET", "/v1/me", bearer=t.get("token"))
    report(st == 201 and st2 == 200 and st3 == 401,
           "a token with expires_in_s 2 works, then is refused", (st, st2, st3))
    st, bad = api("POST", "/v1/tokens", {"expires_in_s": -5},
                  cookie=cookie, csrf=csrf)
    report(st == 400, "a negative expires_in_s is 400", (st, bad))
    _, t2 = api("POST", "/v1/tokens", {"name": "t2"}, cookie=cookie, csrf=csrf)
    st, _ = api("POST", "/v1/logout", bearer=t2["token"])
    st2, _ = api("GET", "/v1/me", bearer=t2["token"])
    report(st == 200 and st2 == 401,
           "POST /v1/logout with a Bearer token revokes that token", (st, st2))
    _, t3 = api("POST", "/v1/tokens", {"name": "t3"}, cookie=cookie, csrf=csrf)
    r = subprocess.run([os.environ["MT"], "user", "passwd", "--db",
                        os.environ["DB"], "alice", "--revoke-tokens"],
                       input=b"alice-password\n", capture_output=True)
    st, _ = api("GET", "/v1/me", cookie=cookie, csrf=csrf)
    st2, _ = api("GET", "/v1/me", bearer=t3["token"])
    report(r.returncode == 0 and st == 401 and st2 == 401,
           "user passwd --revoke-tokens ends the sessions and the tokens",
           (r.returncode, st, st2, r.stderr[-200:]))


for c in sys.argv[3:]:
    name, _, arg = c.partition("=")
    f = globals()["case_" + name]
    f(int(arg)) if arg else f()
