#!/usr/bin/env python3
"""Mixed users against `medtrust serve` for the soak (bench/soak runs it).

USERS threads loop for MINUTES, each picking one action at a time:
  search   POST /v1/search (k 10, rotating queries)
  check    POST /v1/check (strategy single), then its events to the end
  ask      POST /v1/ask, then its events (the answer streams as tokens)
  batch    POST /v1/batch (a few MEDEC notes), then its events
  drop     POST /v1/ask, read the first bytes of its events, hang up
  cancel   POST /v1/check, then cancel it at once
Every minute a line: the server's RSS and open descriptors
(/proc/PID), the requests of that minute by kind, their errors, the p95
latency of search and of the whole run of a check or ask (POST to last
event), and the job queue (/v1/health). The table goes to stdout as
Markdown and, as JSON lines, to --json.

Usage: soak.py URL TOKEN PID --minutes M --users N --notes CSV --json OUT
"""
import argparse
import http.client
import json
import os
import random
import threading
import time
import urllib.parse

QUERIES = ["symptoms of gout", "how is asthma treated",
           "what causes high blood pressure", "side effects of metformin",
           "is diabetes inherited", "treatment for migraine",
           "programmed cell death in plants", "statins and muscle pain",
           "vitamin D and fractures", "antibiotics for otitis media"]
QUESTIONS = ["Do mitochondria play a role in remodelling lace plant leaves "
             "during programmed cell death?",
             "Does aspirin reduce the risk of a second heart attack?",
             "Is metformin safe in pregnancy?"]
# kind -> weight
MIX = {"search": 50, "check": 15, "ask": 15, "batch": 3, "drop": 12,
       "cancel": 5}


class Stats:
    def __init__(self):
        self.mu = threading.Lock()
        self.reset()

    def reset(self):
        self.n = {}
        self.err = {}
        self.lat = {}
        self.errors_seen = {}

    def add(self, kind, seconds, ok, why=""):
        with self.mu:
            self.n[kind] = self.n.get(kind, 0) + 1
            if not ok:
                self.err[kind] = self.err.get(kind, 0) + 1
                self.errors_seen[why[:80]] = self.errors_seen.get(why[:80], 0) + 1
            if ok and seconds is not None:
                self.lat.setdefault(kind, []).append(seconds)

    def take(self):
        with self.mu:
            snap = (self.n, self.err, self.lat, self.errors_seen)
            self.reset()
            return snap


def p95(xs):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.95 * len(xs)))]


class Client:
    def __init__(self, url, token):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.h = {"Authorization": "Bearer " + token,
                  "Content-Type": "application/json"}

    def conn(self, timeout=120):
        return http.client.HTTPConnection(self.host, self.port,
                                          timeout=timeout)

    def post(self, path, body):
        c = self.conn()
        try:
            c.request("POST", path, json.dumps(body), self.h)
            r = c.getresponse()
            data = r.read()
            return r.status, data
        finally:
            c.close()

    def events(self, run, first_bytes=None, timeout=600):
        """Reads /v1/runs/RUN/events to its end (or first_bytes, then
        hangs up); returns the last event's name and whether it ended
        with done/error."""
        c = self.conn(timeout)
        try:
            c.request("GET", "/v1/runs/%d/events" % run, headers=self.h)
            r = c.getresponse()
            if r.status != 200:
                return "http %d" % r.status
            if first_bytes:
                r.read(first_bytes)
                return "dropped"
            last = None
            buf = b""
            while True:
                chunk = r.read1(65536) if hasattr(r, "read1") else r.read(4096)
                if not chunk:
                    break
                buf += chunk
                while b"\n\n" in buf:
                    block, buf = buf.split(b"\n\n", 1)
                    for line in block.split(b"\n"):
                        if line.startswith(b"event: "):
                            last = line[7:].decode()
                    if last in ("done", "error"):
                        return last
            return last or "none"
        finally:
            c.close()


def do_search(cl):
    st, data = cl.post("/v1/search", {"query": random.choice(QUERIES),
                                      "k": 10})
    return st == 200, "search %d" % st


def start_run(cl, path, body):
    st, data = cl.post(path, body)
    if st != 202:
        return None, "%s %d %s" % (path, st, data[:60])
    return json.loads(data)["run_id"], ""


def do_followed(cl, path, body):
    run, why = start_run(cl, path, body)
    if run is None:
        return False, why
    last = cl.events(run)
    # A run that ends in an error event ended cleanly: the scripted model
    # faults and hostile replies make some runs fail by design.
    return last in ("done", "error"), "%s ended with %s" % (path, last)


def do_drop(cl):
    run, why = start_run(cl, "/v1/ask", {"question": random.choice(QUESTIONS)})
    if run is None:
        return False, why
    cl.events(run, first_bytes=random.choice([1, 64, 512]))
    return True, ""


def do_cancel(cl, note):
    run, why = start_run(cl, "/v1/check", {"note": note, "strategy": "single"})
    if run is None:
        return False, why
    st, data = cl.post("/v1/runs/%d/cancel" % run, {})
    # 409: it finished before the cancel came, which is fine
    return st in (202, 200, 409), "cancel %d" % st


def user(cl, stats, stop, notes, batch_csv, seed):
    rnd = random.Random(seed)
    kinds = [k for k, w in MIX.items() for _ in range(w)]
    while not stop.is_set():
        kind = rnd.choice(kinds)
        t0 = time.monotonic()
        try:
            if kind == "search":
                ok, why = do_search(cl)
            elif kind == "check":
                ok, why = do_followed(cl, "/v1/check", {
                    "note": rnd.choice(notes), "strategy": "single"})
            elif kind == "ask":
                ok, why = do_followed(cl, "/v1/ask", {
                    "question": rnd.choice(QUESTIONS)})
            elif kind == "batch":
                ok, why = do_followed(cl, "/v1/batch", {
                    "data": batch_csv, "strategy": "single",
                    "name": "soak"})
            elif kind == "drop":
                ok, why = do_drop(cl)
            else:
                ok, why = do_cancel(cl, rnd.choice(notes))
        except Exception as e:  # a refused or reset connection is an error
            ok, why = False, "%s: %s" % (kind, type(e).__name__)
        stats.add(kind, time.monotonic() - t0, ok, why)


def proc_sample(pid):
    rss = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) // 1024
    fds = len(os.listdir("/proc/%d/fd" % pid))
    return rss, fds


def health(cl):
    try:
        c = cl.conn(10)
        c.request("GET", "/v1/health")
        j = json.loads(c.getresponse().read())
        c.close()
        return "%d/%d" % (j["jobs"]["running"], j["jobs"]["queued"])
    except Exception as e:
        return "? (%s)" % type(e).__name__


def fmt(x):
    return "-" if x is None else "%.0f" % (x * 1000)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("token")
    ap.add_argument("pid", type=int)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--notes", required=True)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    import csv
    import io
    csv.field_size_limit(10 ** 9)
    text = open(a.notes, encoding="utf-8").read()
    rows = list(csv.DictReader(io.StringIO(text)))
    notes = [r["Text"] for r in rows]
    b = io.StringIO()
    w = csv.DictWriter(b, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows[:3])
    batch_csv = b.getvalue()  # header + 3 notes
    cl = Client(a.url, a.token)
    stats, stop = Stats(), threading.Event()
    threads = [threading.Thread(target=user, daemon=True,
                                args=(cl, stats, stop, notes, batch_csv, i))
               for i in range(a.users)]
    rss0, fds0 = proc_sample(a.pid)
    print("| minute | RSS MB | fds | requests (search/check/ask/batch/drop/cancel) "
          "| errors | p95 search ms | p95 check ms | p95 ask ms | jobs run/queued |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---|")
    print("| 0 | %d | %d | - | - | - | - | - | %s |" % (rss0, fds0, health(cl)),
          flush=True)
    out = open(a.json, "w")
    for t in threads:
        t.start()
    t_end = time.monotonic() + a.minutes * 60
    minute = 0
    all_errors = {}
    while time.monotonic() < t_end - 1:
        time.sleep(min(60, max(0, t_end - time.monotonic())))
        minute += 1
        n, err, lat, seen = stats.take()
        for k, v in seen.items():
            all_errors[k] = all_errors.get(k, 0) + v
        rss, fds = proc_sample(a.pid)
        row = {"minute": minute, "rss_mb": rss, "fds": fds,
               "n": n, "err": err,
               "p95_search_s": p95(lat.get("search", [])),
               "p95_check_s": p95(lat.get("check", [])),
               "p95_ask_s": p95(lat.get("ask", [])),
               "jobs": health(cl)}
        out.write(json.dumps(row) + "\n")
        out.flush()
        print("| %d | %d | %d | %s | %d | %s | %s | %s | %s |" % (
            minute, rss, fds,
            "/".join(str(n.get(k, 0)) for k in MIX),
            sum(err.values()), fmt(row["p95_search_s"]),
            fmt(row["p95_check_s"]), fmt(row["p95_ask_s"]), row["jobs"]),
            flush=True)
    stop.set()
    for t in threads:
        t.join(timeout=120)
    time.sleep(5)
    rss, fds = proc_sample(a.pid)
    print("\nafter the users stopped: RSS %d MB, %d descriptors, jobs %s"
          % (rss, fds, health(cl)))
    print("errors by reason: %s" % json.dumps(all_errors, sort_keys=True))


if __name__ == "__main__":
    main()
