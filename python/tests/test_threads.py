"""Long calls release the GIL: two threads search while a third is inside
a check whose model call the stub holds; Ctrl-C during a check."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, List

import medtrust
from conftest import NOTE, ROOT, Stub


def wait_for(cond: Any, what: str, limit: float = 60.0) -> None:
    """Polls cond() until true; fails naming what was awaited (a bound on
    a hang, not a timing assertion)."""
    end = time.monotonic() + limit
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def test_two_threads_search_while_a_third_checks(py_store: Path,
                                                 tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    hold.write_text("")
    stub = Stub(tmp_path, "--hold-while", str(hold))
    try:
        st = medtrust.Store(py_store)
        st.search("warm up", mode="bm25")
        result: List[Any] = []
        with medtrust.Checker(llm=stub.spec, strategy="single") as c:
            t = threading.Thread(target=lambda: result.append(c.check(NOTE)))
            t.start()
            # the check is inside mt_agent_check, its model call held
            wait_for(lambda: hold.stat().st_size == 0 and _arrived(stub),
                     "the check's model call to arrive")
            counts = [0, 0]

            def searcher(i: int) -> None:
                for _ in range(25):
                    assert st.search("leukemia treatment", mode="bm25")
                    counts[i] += 1

            ss = [threading.Thread(target=searcher, args=(i,)) for i in (0, 1)]
            for s in ss:
                s.start()
            for s in ss:
                s.join(120)
            # every search finished while the check still waited in C: the
            # check's thread was not holding the GIL
            assert counts == [25, 25] and t.is_alive() and not result
            hold.unlink()
            t.join(120)
        assert result and result[0].error_flag
        st.close()
    finally:
        stub.stop()


def _arrived(stub: Stub) -> bool:
    """A call is in flight: the stub holds an established connection (its
    log gets a line only once it answers, and a held call has not)."""
    port = "%04X" % int(stub.spec.rsplit(":", 1)[1].split("#")[0])
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            if cols[1].endswith(":" + port) and cols[3] == "01":
                return True
    return False


CHILD = r"""
import signal, sys, medtrust
# Python's own Ctrl-C even when started with SIGINT ignored (a suite run
# in the background of a shell without job control inherits that)
signal.signal(signal.SIGINT, signal.default_int_handler)
c = medtrust.Checker(llm=sys.argv[1], strategy="react-reflex",
                     no_retrieval=True)
print("ready", flush=True)
try:
    c.check({"id": "n1", "text": sys.argv[2]})
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(0)
print("finished", flush=True)
"""


def test_ctrl_c_during_check(tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    hold.write_text("")
    stub = Stub(tmp_path, "--hold-while", str(hold))
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        p = subprocess.Popen([sys.executable, "-c", CHILD, stub.spec, NOTE],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        wait_for(lambda: _arrived(stub), "the first model call")
        p.send_signal(signal.SIGINT)  # as Ctrl-C in a terminal
        time.sleep(0.2)  # (any delay works: the flag is polled later)
        hold.unlink()  # the call in flight finishes; no next one starts
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
        assert out.strip() == "interrupted"
        assert stub.calls() <= 1  # the one in flight; react-reflex makes many
    finally:
        stub.stop()
