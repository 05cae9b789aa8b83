"""Shared fixtures of the Python package's tests (run by
tests/integration/test_python.sh, which sets MEDTRUST_LIB to the build
under test's libmedtrust.so and MEDTRUST_BIN to its medtrust)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

BUILD = Path(os.environ.get("MEDTRUST_BUILD", ROOT / "build" / "test"))
BIN = os.environ.get("MEDTRUST_BIN", str(BUILD / "medtrust"))
DATA = Path(os.environ.get("MEDTRUST_DATA", ROOT.parent / "shared" / "data"))
os.environ.setdefault("MEDTRUST_LIB", str(BUILD / "libmedtrust.so"))


def sub_env(**extra: str) -> Dict[str, str]:
    """The environment for a child process: without the libasan preload
    this Python runs under (the medtrust binary and fixtures link their
    own; llama-server must not get it), leak checks back on."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["ASAN_OPTIONS"] = env.get("MT_CHILD_ASAN_OPTIONS",
                                  "detect_leaks=1:abort_on_error=1")
    env.update(extra)
    return env


def cli(*args: str, check: bool = True, **extra: str) -> subprocess.CompletedProcess:
    """Runs the medtrust binary under test."""
    r = subprocess.run([BIN, *args], capture_output=True, text=True,
                       env=sub_env(**extra))
    if check and r.returncode != 0:
        raise AssertionError(f"medtrust {' '.join(args)}: exit "
                             f"{r.returncode}\n{r.stderr[-2000:]}")
    return r


def json_lines(text: str) -> List[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 MedQuAD answers as corpus JSONL (the shipped data set)."""
    src = DATA / "medquad" / "corpus.jsonl"
    if not src.exists():
        pytest.fail(f"{src} missing: set MEDTRUST_DATA (see README, Data sets)")
    out = tmp_path_factory.mktemp("corpus") / "medquad.jsonl"
    with open(src, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as g:
        for i, line in enumerate(f):
            if i == 200:
                break
            g.write(line)
    return out


@pytest.fixture(scope="session")
def docs(corpus: Path) -> List[dict]:
    with open(corpus, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="session")
def cli_store(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus indexed by `medtrust index` (BM25 only)."""
    db = tmp_path_factory.mktemp("cli") / "db"
    cli("index", "--db", str(db), "--input", str(corpus), "--embedder",
        "none", "--no-progress")
    return db


@pytest.fixture(scope="session")
def py_store(corpus: Path, docs: List[dict],
             tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same corpus added and indexed from Python (source named as the
    CLI names it: the file's base name)."""
    import medtrust

    db = tmp_path_factory.mktemp("py") / "db"
    with medtrust.Store(db) as st:
        st.add(docs, source=corpus.stem)
        st.index(embedder="none")
    return db


class Stub:
    """tests/fixtures/agent_stub on loopback: the role-aware OpenAI-
    compatible model the C suites check against."""

    def __init__(self, tmp: Path, *args: str) -> None:
        self.log = tmp / "stub.log"
        self.proc = subprocess.Popen(
            [str(BUILD / "fixtures" / "agent_stub"), "--log", str(self.log),
             *args], stdout=subprocess.PIPE, text=True, env=sub_env())
        assert self.proc.stdout is not None
        port = self.proc.stdout.readline().strip()
        assert port.isdigit(), f"agent_stub printed {port!r}"
        self.spec = f"openai:http://127.0.0.1:{port}#stub"

    def calls(self) -> int:
        try:
            return len(self.log.read_text().splitlines())
        except FileNotFoundError:
            return 0

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture()
def stub(tmp_path: Path):
    s = Stub(tmp_path)
    yield s
    s.stop()


NOTE = ("A 62-year-old man has crushing chest pain.\n"
        "ECG shows ST elevation in II, III and aVF.\n"
        "He is given aspirin and sent home.\n")


@pytest.fixture(scope="session")
def medec_small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 6 notes of MEDEC's validation split, as a MEDEC CSV."""
    import csv
    src = DATA / "medec" / \
        "MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"
    if not src.exists():
        pytest.fail(f"{src} missing: set MEDTRUST_DATA")
    out = tmp_path_factory.mktemp("medec") / "notes.csv"
    with open(src, newline="", encoding="utf-8") as f, \
            open(out, "w", newline="", encoding="utf-8") as g:
        r = csv.reader(f)
        w = csv.writer(g)
        for i, row in enumerate(r):
            if i > 6:
                break
            w.writerow(row)
    return out
