"""The (type, data) pairs of a Server-Sent Events capture, for the
integration tests that compare streams (test_state_pg, test_jobs_pg)."""
import json


def events(path):
    out, cur = [], {}
    for line in open(path):
        line = line.rstrip("\n")
        if not line:
            if cur:
                out.append((cur.get("event"), json.loads(cur.get("data", "null"))))
            cur = {}
        elif ":" in line:
            k, v = line.split(":", 1)
            cur[k] = v[1:] if v.startswith(" ") else v
    return out
