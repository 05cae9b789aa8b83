"""ask() and verify() against the loopback agent stub on a real store:
the same answers, claims and verdicts as `medtrust ask` and `medtrust
verify`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

import medtrust
from conftest import cli

DOCS = [
    {"id": "1001", "title": "Aspirin after infarction",
     "text": "Aspirin reduces the risk of recurrent myocardial infarction. "
             "Low-dose aspirin is given daily after a heart attack.",
     "url": "https://example.org/aspirin"},
    {"id": "1002", "title": "Aspirin in the elderly",
     "text": "Aspirin does not reduce the risk of recurrent myocardial "
             "infarction in elderly patients. Bleeding rose with aspirin."},
    {"id": "1003", "title": "Statins",
     "text": "Statins lower LDL cholesterol and reduce cardiovascular events."},
]
QUESTION = "Does aspirin prevent a second myocardial infarction?"


@pytest.fixture()
def qa_db(tmp_path: Path) -> Path:
    db = tmp_path / "db"
    with medtrust.Store(db) as st:
        st.add(DOCS, source="docs")
        st.index(embedder="none")
    return db


def _untimed(o: Any) -> Any:
    """The result without wall times (usage.seconds, ms)."""
    if isinstance(o, dict):
        return {k: _untimed(v) for k, v in o.items()
                if k not in ("seconds", "ms", "elapsed_ms")}
    if isinstance(o, list):
        return [_untimed(v) for v in o]
    return o


def test_ask_matches_cli(stub: Any, qa_db: Path) -> None:
    r = cli("ask", "--db", str(qa_db), "--llm", stub.spec, "--nli", "llm",
            "--json", QUESTION, check=False)
    want = json.loads(r.stdout.splitlines()[-1])
    claims = []
    try:
        got = medtrust.ask(QUESTION, db=qa_db, llm=stub.spec, nli="llm",
                           on_claim=lambda i, n, c: claims.append((i, n)))
        assert r.returncode == 0, r.stderr
    except medtrust.ModelError as e:  # then the CLI failed the same way
        assert r.returncode == 1
        got = e.result  # type: ignore[attr-defined]
    assert _untimed(got.raw) == _untimed(want)
    assert got.answer and got.claims and got.documents
    assert {d["doc_id"] for d in got.documents} <= {"1001", "1002", "1003"}
    assert [i for i, _ in claims] == list(range(len(got.claims)))


def test_answerer_keeps_models_open_for_many_questions(stub: Any,
                                                       qa_db: Path) -> None:
    with medtrust.Answerer(qa_db, stub.spec, nli="llm", k=2) as a:
        one = a.ask(QUESTION)
        two = a.ask("Do statins lower LDL cholesterol?", k=1)
    assert len(one.documents) == 2 and len(two.documents) == 1
    assert two.documents[0]["doc_id"] == "1003"
    with pytest.raises(medtrust.InvalidArgumentError):
        a.ask(QUESTION)  # closed


def test_ask_errors(stub: Any, qa_db: Path) -> None:
    with pytest.raises(medtrust.InvalidArgumentError):
        medtrust.ask("", db=qa_db, llm=stub.spec, nli="llm")
    with pytest.raises(medtrust.Error) as ei:
        medtrust.ask(QUESTION, db=qa_db / "none", llm=stub.spec, nli="llm")
    assert "none" in str(ei.value)


def test_verify_matches_cli(stub: Any, qa_db: Path, tmp_path: Path) -> None:
    text = ("Aspirin reduces the risk of recurrent myocardial infarction. "
            "Statins lower LDL cholesterol and reduce cardiovascular events.")
    f = tmp_path / "text.txt"
    f.write_text(text)
    r = cli("verify", "--db", str(qa_db), "--llm", stub.spec, "--nli", "llm",
            "-k", "3", "--json", str(f), check=False)
    want: Dict[str, Any] = json.loads(r.stdout.splitlines()[-1])
    try:
        got = medtrust.verify(text, db=qa_db, llm=stub.spec, nli="llm", k=3)
        assert r.returncode == 0, r.stderr
    except medtrust.ModelError as e:
        assert r.returncode == 1
        got = e.result  # type: ignore[attr-defined]
    assert _untimed(got) == _untimed(want)
    assert got["sentences"]
