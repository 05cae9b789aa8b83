"""Ctrl-C during Store.index(): KeyboardInterrupt through the library's
cancel flag, a store and index left whole, and a rerun that finishes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List

import medtrust
from conftest import ROOT, cli

CHILD = r"""
import os, signal, sys, threading
import medtrust
st = medtrust.Store(sys.argv[1])
sent = []
handled = threading.Event()
def on_sigint(sig, frame):  # Python's own behaviour, and a mark
    handled.set()
    raise KeyboardInterrupt
signal.signal(signal.SIGINT, on_sigint)
def progress(done, total):
    if not sent:  # Ctrl-C as a terminal sends it, at the first chunk
        sent.append(done)
        os.kill(os.getpid(), signal.SIGINT)
        # the build goes on only once the main thread took the signal,
        # however loaded the machine (the flag is polled 63 chunks on)
        handled.wait(60)
try:
    st.index(embedder="use-lite", progress=progress)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    st.close()
    sys.exit(0)
print("finished", flush=True)
"""


def test_ctrl_c_during_index(docs: List[dict], tmp_path: Path) -> None:
    db = tmp_path / "db"
    with medtrust.Store(db) as st:
        st.add(docs[:40], source="mq")
        chunks = st.stats()["total"]["chunks"]
    assert chunks > 128  # the build polls its cancel flag every 64 chunks
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    r = subprocess.run([sys.executable, "-c", CHILD, str(db)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "interrupted"
    # stopped before its one segment was written: no index yet, and the
    # store is sound
    assert not (db / "index" / "MANIFEST").exists()
    cli("stats", "--db", str(db), "--check")
    with medtrust.Store(db) as st:
        res = st.index(embedder="use-lite")
        assert res.chunks_added == chunks
        assert st.stats()["index"]["embedder"] == "use-lite"
        assert len(st.search("leukemia", mode="hybrid", k=3)) == 3


def test_ctrl_c_during_a_rebuild_keeps_the_old_index(
        docs: List[dict], tmp_path: Path) -> None:
    """A rebuild interrupted leaves the index as it was: the same hits."""
    db = tmp_path / "db"
    with medtrust.Store(db) as st:
        st.add(docs[:40], source="mq")
        st.index(embedder="none")
        before = st.search("leukemia", mode="bm25")
    child = CHILD.replace('embedder="use-lite"',
                          'embedder="use-lite", rebuild=True')
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    r = subprocess.run([sys.executable, "-c", child, str(db)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0 and r.stdout.strip() == "interrupted", r.stderr
    with medtrust.Store(db) as st:
        assert st.search("leukemia", mode="bm25") == before
        assert st.stats()["index"]["embedder"] is None
