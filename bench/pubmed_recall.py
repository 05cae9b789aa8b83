#!/usr/bin/env python3
"""Exact top-10 lists for a dense recall check of a pubmed_hybrid.sh index:
query vectors drawn as its generated vectors are (bench/pubmed_vectors.py),
and each query's exact top 10 by cosine over every chunk's vector, made
again block by block (float16, as the build read them; float32 sums), so
nothing of the 43 GB of vectors is ever on disk. bench/index_recall then
searches the index with the queries and counts the overlap.

Usage: pubmed_recall.py STORE.db OUT [--clusters K] [--queries N]
                        [--upto MAX_CHUNK_ID]
Writes OUT.q.f32 (N x 256 float32) and OUT.gt.u32 (N x 10 chunk ids).
--upto: only chunks up to that id (an index built that far).
Run it with the bootstrap's venv (third_party/venv/bin/python3: numpy
2.4.6 with OpenBLAS, the same random streams as Debian's numpy 1.24, whose
reference BLAS makes this about 10x slower): a block of 65,536 chunks
takes about a second of one core."""
import argparse
import os
import sqlite3
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pubmed_vectors import BLOCK, block, centres, queries  # noqa: E402

K = 10


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("store")
    ap.add_argument("out")
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--upto", type=int, default=None)
    a = ap.parse_args()
    c = sqlite3.connect(f"file:{a.store}?mode=ro", uri=True)
    # the progress bar's total: the largest id (instant; count(*) would
    # scan the table)
    n = c.execute("select max(id) from chunks").fetchone()[0] or 0
    if a.upto is not None:
        n = min(n, a.upto)
    cent = centres(a.clusters)
    q = queries(cent, a.queries)
    best_s = np.full((a.queries, K), -np.inf, dtype=np.float32)
    best_id = np.zeros((a.queries, K), dtype=np.int64)
    qk = np.repeat(np.arange(a.queries), K)
    cur = c.execute("select id from chunks order by id")
    row, t0, done, last = 0, time.monotonic(), False, 0
    while not done:
        ids = np.array([r[0] for r in cur.fetchmany(BLOCK)], dtype=np.int64)
        if len(ids) == 0:
            break
        if a.upto is not None and ids[-1] > a.upto:
            ids, done = ids[ids <= a.upto], True
        last = int(ids[-1]) if len(ids) else last
        v = block(cent, row // BLOCK)[:len(ids)].astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)  # as the index does
        s = q @ v.T  # queries x rows
        # only the rows above a query's 10th best so far can enter its
        # list (after the first block, a handful a block)
        qi, ri = np.nonzero(s > best_s[:, -1:])
        allq = np.concatenate([qk, qi])
        alls = np.concatenate([best_s.ravel(), s[qi, ri]])
        alli = np.concatenate([best_id.ravel(), ids[ri]])
        order = np.lexsort((-alls, allq))  # by query, best first
        first = np.concatenate([[0], np.cumsum(np.bincount(allq, minlength=a.queries))[:-1]])
        pick = order[(first[:, None] + np.arange(K)).ravel()]
        best_s = alls[pick].reshape(a.queries, K)
        best_id = alli[pick].reshape(a.queries, K)
        row += BLOCK
        el = time.monotonic() - t0
        at = int(ids[-1]) if len(ids) else n
        print(f"\rpubmed_recall: chunk id {at:,}/{n:,}, "
              f"{at / el:,.0f}/s, ETA {(n - at) / max(at / el, 1e-9):.0f} s",
              end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if best_id.max() >= 1 << 32:
        sys.exit("pubmed_recall: a chunk id past 2^32 does not fit GT.u32")
    for path, arr in ((a.out + ".q.f32", q.astype(np.float32)),
                      (a.out + ".gt.u32", best_id.astype(np.uint32))):
        with open(path + ".tmp", "wb") as f:
            f.write(np.ascontiguousarray(arr).tobytes())
        os.replace(path + ".tmp", path)
    print(f"{a.out}.q.f32: {a.queries} queries; {a.out}.gt.u32: exact top "
          f"{K} over the chunks up to id {last}")


if __name__ == "__main__":
    main()
