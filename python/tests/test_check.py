"""Checker against the loopback agent stub: every strategy, the same
verdicts and submission lines as `medtrust check` and `medtrust mediqa`,
settings through the library's table, errors, on_step, check_many."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, List

import pytest

import medtrust
from conftest import NOTE, cli, json_lines

VERDICT = ("error_flag", "error_sentence_id", "error_sentence",
           "corrected_sentence", "corrected_text", "strategy", "fallback")


def _untimed(trace: List[dict]) -> List[dict]:
    return [{k: v for k, v in t.items() if k != "ms"} for t in trace]


def medec_notes(path: Path) -> List[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return [{"id": r["Text ID"], "text": r["Text"],
                 "sentences": r["Sentences"]} for r in csv.DictReader(f)]


@pytest.mark.parametrize("strategy", ["single", "guards", "react-reflex"])
def test_check_matches_cli(stub: Any, tmp_path: Path, strategy: str) -> None:
    note = tmp_path / "note.txt"
    note.write_text(NOTE)
    nr = ["--no-retrieval"] if strategy == "react-reflex" else []
    want = json.loads(cli("check", "--llm", stub.spec, "--strategy",
                          strategy, *nr, "--json", str(note)).stdout)
    steps: List[Any] = []
    with medtrust.Checker(llm=stub.spec, strategy=strategy,
                          no_retrieval=bool(nr)) as c:
        r = c.check({"id": str(note), "text": NOTE},
                    on_step=lambda nid, s: steps.append((nid, s)))
    got = {"error_flag": int(r.error_flag),
           "error_sentence_id": r.sentence_id,
           "error_sentence": r.error_sentence,
           "corrected_sentence": r.corrected_sentence,
           "corrected_text": r.corrected_text, "strategy": r.strategy,
           "fallback": r.fallback}
    assert got == {k: want[k] for k in VERDICT}
    assert r.error_flag and r.sentence_id == 2  # the stub's: the last one
    # the same trace, record for record, but for each call's duration
    assert _untimed(r.trace) == _untimed(want["trace"])
    assert r.usage["llm_calls"] == want["usage"]["llm_calls"]
    assert len(steps) == len(r.trace) and all(n == str(note) for n, _ in steps)


def test_check_many_matches_mediqa(stub: Any, medec_small: Path,
                                   tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    cli("mediqa", "--data", str(medec_small), "--strategy", "single",
        "--llm", stub.spec, "--out", str(run), "--jobs", "2")
    notes = medec_notes(medec_small)
    with medtrust.Checker(llm=stub.spec, strategy="single") as c:
        results = list(c.check_many(notes, jobs=3, progress=False))
    assert [r.id for r in results] == [n["id"] for n in notes]
    lines = [r.submission_line() for r in results]
    assert lines == run.read_text().splitlines()
    # score: the same figures as `medtrust score --json` on the CLI's run
    want = json.loads(cli("score", "--ref", str(medec_small), "--pred",
                          str(run), "--json").stdout)
    got = medtrust.score(medec_small, results, name=str(run))
    assert got == want
    assert medtrust.score(medec_small, run) == want


def test_score_to_pandas(stub: Any, medec_small: Path) -> None:
    pd = pytest.importorskip("pandas")
    lines = [f"{n['id']} 0 -1 NA" for n in medec_notes(medec_small)]
    s = medtrust.score(medec_small, lines)
    df = s.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert df.loc["error_flag_accuracy", "composite"] == \
        s["error_flag_accuracy"]
    assert "rouge1" in df.index


def test_settings_go_through_the_librarys_table(stub: Any) -> None:
    with medtrust.Checker(llm=stub.spec, strategy="react-reflex",
                          no_retrieval=True, steps=2, rounds=1,
                          evaluators=3, eval_quorum=2, accept_mean=3.5,
                          temperature=0.2) as c:
        r = c.check(NOTE)
    assert r.usage["llm_calls"] > 0
    with pytest.raises(medtrust.InvalidArgumentError) as ei:
        medtrust.Checker(llm=stub.spec, strategy="single", stepz=3)
    assert "unknown setting 'stepz'" in str(ei.value) and "steps" in str(ei.value)
    with pytest.raises(medtrust.InvalidArgumentError) as ei:
        medtrust.Checker(llm=stub.spec, strategy="single", steps=99)
    assert "1..32" in str(ei.value)
    with pytest.raises(medtrust.InvalidArgumentError):
        medtrust.Checker(llm=stub.spec, strategy="single", steps=2.5)
    assert "steps" in medtrust.settings_help()


def test_errors(stub: Any, tmp_path: Path) -> None:
    with pytest.raises(medtrust.InvalidArgumentError):
        medtrust.Checker(llm=stub.spec, strategy="nope")
    with pytest.raises(medtrust.Error) as ei:  # react-reflex needs a corpus
        medtrust.Checker(llm=stub.spec, strategy="react-reflex")
    assert "no-retrieval" in str(ei.value) or "db" in str(ei.value)
    with medtrust.Checker(llm=stub.spec, strategy="single") as c:
        with pytest.raises(medtrust.InvalidArgumentError):
            c.check("")
        with pytest.raises(medtrust.LimitError):
            c.check("word " * 70000)


def test_unreachable_model_raises_model_error_with_the_fallback() -> None:
    """A model whose calls fail gives no verdict: ModelError carrying the
    fallback result, never a 'no error' answer."""
    with medtrust.Checker(llm="openai:http://127.0.0.1:9/v1#none",
                          strategy="single", timeout=5) as c:
        with pytest.raises(medtrust.ModelError) as ei:
            c.check(NOTE)
    r = ei.value.result  # type: ignore[attr-defined]
    assert r.fallback and r.fallback_why
    assert r.usage["failed_calls"] >= 1


def test_allow_fallbacks_returns_the_fallback_marked() -> None:
    """allow_fallbacks=1 (the Checker's, or one call's) returns the
    fallback verdict instead of raising, marked fallback with why."""
    spec = "openai:http://127.0.0.1:9/v1#none"
    with medtrust.Checker(llm=spec, strategy="single", timeout=5,
                          allow_fallbacks=1) as c:
        r = c.check(NOTE)
        assert r.fallback and "fallback" in (r.fallback_why or "")
        with pytest.raises(medtrust.ModelError):
            c.check(NOTE, allow_fallbacks=0)
    with medtrust.Checker(llm=spec, strategy="single", timeout=5) as c:
        r = c.check(NOTE, allow_fallbacks=1)
    assert r.fallback and r.usage["failed_calls"] >= 1


def test_check_many_return_exceptions(stub: Any) -> None:
    with medtrust.Checker(llm=stub.spec, strategy="single") as c:
        out = list(c.check_many(["", NOTE], jobs=2, progress=False,
                                return_exceptions=True))
    assert isinstance(out[0], medtrust.InvalidArgumentError)
    assert isinstance(out[1], medtrust.CheckResult) and out[1].error_flag


def test_examples_quickstart_runs(stub: Any, medec_small: Path,
                                  corpus: Path, tmp_path: Path) -> None:
    """examples/quickstart.py, the script a user starts from, end to end
    against the stub: index, search, check, score."""
    import subprocess
    import sys
    from conftest import ROOT
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py"),
         "--db", str(tmp_path / "db"), "--corpus", str(corpus), "--docs",
         "50", "--embedder", "none", "--notes", str(medec_small), "--n",
         "3", "--llm", stub.spec, "--strategy", "react-reflex"],
        capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout
    assert "indexed: 50 new documents" in out
    assert "1. " in out and "error flag accuracy" in out
    assert out.count("ms-val-") == 3


def test_per_call_strategy_and_settings(stub: Any, tmp_path: Path) -> None:
    """One Checker, each call its own strategy and settings
    (mt_agent_check_with): the same verdict and trace as `medtrust check`
    opened with them."""
    note = tmp_path / "note.txt"
    note.write_text(NOTE)
    with medtrust.Checker(llm=stub.spec, strategy="single",
                          no_retrieval=True) as c:
        for strategy, settings, flags in (
                ("guards", {}, []),
                ("react-reflex", {"steps": 1, "rounds": 2, "evaluators": 2,
                                  "eval_quorum": 1},
                 ["--no-retrieval", "--steps", "1", "--rounds", "2",
                  "--evaluators", "2", "--eval-quorum", "1"])):
            want = json.loads(cli("check", "--llm", stub.spec, "--strategy",
                                  strategy, *flags, "--json",
                                  str(note)).stdout)
            r = c.check({"id": str(note), "text": NOTE}, strategy=strategy,
                        **settings)
            assert r.strategy == want["strategy"] == strategy
            assert _untimed(r.trace) == _untimed(want["trace"])
        with pytest.raises(medtrust.InvalidArgumentError):
            c.check(NOTE, steps=0)
        with pytest.raises(medtrust.InvalidArgumentError) as ei:
            c.check(NOTE, shots=2)  # the handle's, not a call's
        assert "Checker()" in str(ei.value)
        out = list(c.check_many([NOTE, NOTE], jobs=2, progress=False,
                                strategy="guards"))
        assert [r.strategy for r in out] == ["guards", "guards"]


def test_read_notes_and_to_pandas(stub: Any, medec_small: Path,
                                  py_store: Path) -> None:
    """read_notes gives check_many what `medtrust mediqa --data` reads;
    to_pandas makes frames of results and hits."""
    notes = medtrust.read_notes(medec_small)
    assert notes == medec_notes(medec_small)
    assert medtrust.read_notes(medec_small, limit=2) == notes[:2]
    pd = pytest.importorskip("pandas")
    with medtrust.Checker(llm=stub.spec, strategy="single") as c:
        results = list(c.check_many(notes[:3], progress=False))
    df = medtrust.to_pandas(results)
    assert isinstance(df, pd.DataFrame) and len(df) == 3
    assert list(df["id"]) == [n["id"] for n in notes[:3]]
    assert "trace" not in df.columns and df["error_flag"].dtype == bool
    with medtrust.Store(py_store) as st:
        hits = st.search("leukemia", k=4, mode="bm25")
    hf = medtrust.to_pandas(hits)
    assert list(hf["id"]) == [h.id for h in hits]
    assert list(hf["score"]) == [h.score for h in hits]
