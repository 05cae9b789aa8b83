#!/usr/bin/env python3
"""Peak RSS of a running `medtrust serve` through one POST /v1/ask whose
model is hostile (tests/fixtures/hostile_server.c), for test_budgets.sh.
Usage: rss_probe.py URL PID USER PASSWORD
Logs in, asks one question, reads the run's event stream to its "done"
event, and prints one JSON line:
  {"status": run status, "error": its error, "events": [types...],
   "hwm_kb": VmHWM after the run, "rss_kb": VmRSS after it}
No timing thresholds: it waits for the run's end (at most 300 s)."""
import http.client
import json
import sys
import time
import urllib.parse

URL, PID, USER, PW = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
u = urllib.parse.urlparse(URL)


def status_kb(field):
    for line in open("/proc/%d/status" % PID):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def req(method, path, body=None, headers=None, timeout=300):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request(method, path, json.dumps(body) if body is not None else None, h)
    r = c.getresponse()
    return r, c


r, c = req("POST", "/v1/login", {"username": USER, "password": PW})
login = json.loads(r.read())
cookie = r.getheader("Set-Cookie").split(";")[0]
c.close()
auth = {"Cookie": cookie, "X-CSRF-Token": login["csrf_token"]}
r, c = req("POST", "/v1/ask", {"question": "What is aspirin used for?"}, auth)
run = json.loads(r.read())["run_id"]
c.close()
r, c = req("GET", "/v1/runs/%d/events" % run, None, auth)
types, cur, t0 = [], None, time.time()
while time.time() - t0 < 300:
    line = r.fp.readline()
    if not line:
        break
    line = line.decode("utf-8", "replace").rstrip("\n")
    if line.startswith("event: "):
        cur = line[7:]
        if not types or types[-1] != cur:
            types.append(cur)
        if cur == "done":
            break
c.close()
r, c = req("GET", "/v1/runs/%d" % run, None, auth)
got = json.loads(r.read())
c.close()
print(json.dumps({"status": got.get("status"), "error": got.get("error"),
                  "events": types, "hwm_kb": status_kb("VmHWM"),
                  "rss_kb": status_kb("VmRSS")}))
