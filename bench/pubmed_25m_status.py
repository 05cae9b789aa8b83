#!/usr/bin/env python3
"""Where a bench/pubmed_25m.sh run stands: python3 bench/pubmed_25m_status.py DIR

Sums its parts' /usr/bin/time reports (import batches, generation, the
BM25-only index, the one-pass BM25 + vector build, each killed or paused
part included) and reads its indexes' MANIFESTs; prints Markdown."""
import glob
import json
import os
import re
import shutil
import sys


def tv(path):
    """(wall s, CPU s, peak RSS MB) of one /usr/bin/time -v report."""
    t = open(path).read()
    w = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", t).group(1)
    wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(w.split(":"))))
    cpu = float(re.search(r"User time.*: (\S+)", t).group(1)) + float(
        re.search(r"System time.*: (\S+)", t).group(1))
    rss = int(re.search(r"Maximum resident set size.*: (\d+)", t).group(1)) / 1024
    return wall, cpu, rss


def total(paths):
    # a report still empty: its step is running (or the machine stopped
    # under it)
    s = [tv(p) for p in paths if "Elapsed" in open(p).read()]
    return (sum(x[0] for x in s), sum(x[1] for x in s),
            max((x[2] for x in s), default=0), len(s))


def manifest(d):
    try:
        m = json.load(open(d + "/MANIFEST"))
    except OSError:
        return None
    return m


def size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    n = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                n += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return n


def main():
    d = sys.argv[1]
    run, hyb, db = d + "/run", d + "/hybrid", d + "/db"
    print("| part | count | wall s | CPU s (user+sys) | peak RSS MB |")
    print("|---|---|---|---|---|")
    batches = sorted(glob.glob(run + "/batch-*.json"))
    recs = docs = chunks = 0
    for j in batches:
        o = json.load(open(j))
        recs += o.get("records", 0)
        docs += o.get("documents", 0)
        chunks += o.get("chunks", 0)
    w, c, r, n = total(glob.glob(run + "/batch-*.time"))
    print(f"| import, {len(batches)} batches ({n} reports) | {recs:,} records, "
          f"{docs:,} documents, {chunks:,} chunks | {w:,.0f} | {c:,.0f} | {r:,.0f} |")
    gens = glob.glob(run + "/batch-*.gen")
    gw = sum(float(re.search(r"wall_s (\S+)", open(g).read()).group(1)) for g in gens)
    print(f"| generation (beside the import), {len(gens)} batches | | {gw:,.0f} | | |")
    for stem, what in ((run + "/index-final", "BM25-only index (--segment-mb 4096)"),
                       (hyb + "/hybrid-25000000.vec", "BM25 + int8r2 vectors, one pass (--segment-mb 8192)"),
                       (hyb + "/hybrid-25000000.gen", "vector generator (numpy, piped)")):
        parts = sorted(glob.glob(stem + ".part*.time")) + \
            ([stem + ".time"] if os.path.exists(stem + ".time") else [])
        if parts:
            w, c, r, n = total(parts)
            print(f"| {what}, {n} part(s) | | {w:,.0f} | {c:,.0f} | {r:,.0f} |")
    for p in sorted(glob.glob(d + "/parts/*.time")):
        if "Elapsed" not in open(p).read():
            print(f"| driver {os.path.basename(p)[:-5]} | running (or stopped) | | | |")
            continue
        w, c, r = tv(p)
        print(f"| driver {os.path.basename(p)[:-5]} | | {w:,.0f} | {c:,.0f} | {r:,.0f} |")
    print()
    m = manifest(db + "/index")
    if m:
        segs = m["segments"]
        vec = sum(s["chunks"] for s in segs if s.get("vectors"))
        print(f"index: {len(segs)} segment(s), {sum(s['chunks'] for s in segs):,} "
              f"chunks ({vec:,} with vectors), max_chunk_id {m['max_chunk_id']:,}")
    free = shutil.disk_usage(d).free
    print(f"store.db {size(db + '/store.db') / 1e9:.2f} GB, index "
          f"{size(db + '/index') / 1e9:.2f} GB, free {free / 2 ** 30:.1f} GiB")
    for f in (hyb + "/hybrid-25000000.paused",):
        if os.path.exists(f):
            print("paused:", open(f).read().strip())
    ats = sorted({re.search(r"\.at-(\d+)\.", f).group(1)
                  for f in glob.glob(hyb + "/hybrid-25000000.at-*.json")}, key=int)
    for at in ats:
        print()
        print(f"latency of the index up to chunk id {int(at):,} (paused there):")
        print("| mode / query threads | p50 ms | p95 ms | p99 ms | queries |")
        print("|---|---|---|---|---|")
        for mode in ("bm25", "dense", "hybrid"):
            for j in (1, 2):
                f = f"{hyb}/hybrid-25000000.at-{at}.{mode}.{j}.json"
                if os.path.exists(f):
                    o = json.load(open(f))
                    lat = o["latency_ms"]
                    print(f"| {mode}/{j} | " + " | ".join(
                        "-" if lat.get(k) is None else f"{lat[k]:.2f}"
                        for k in ("p50", "p95", "p99")) + f" | {o.get('queries')} |")
    for f in (run + "/pubmed-25000000.md", hyb + "/hybrid-25000000.md"):
        if os.path.exists(f):
            print()
            print(open(f).read())


main()
