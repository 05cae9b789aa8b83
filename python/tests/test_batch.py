"""Checker.run_batch on the library's note runner (medtrust/batch.h)
against the loopback agent stub: the same submission and trace as
`medtrust mediqa`, a journal that resumes without redoing a note, and
failed notes reported, not raised."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import medtrust
from conftest import cli, json_lines


def _untimed(lines: List[dict]) -> List[dict]:
    for x in lines:
        for t in x.get("trace", []):
            t.pop("ms", None)
    return lines


def test_run_batch_writes_what_mediqa_writes(stub: Any, medec_small: Path,
                                             tmp_path: Path) -> None:
    cli("mediqa", "--data", str(medec_small), "--strategy", "single",
        "--llm", stub.spec, "--out", str(tmp_path / "cli.txt"), "--trace",
        str(tmp_path / "cli.jsonl"), "--jobs", "2", "--no-progress")
    seen: List[Tuple[Dict[str, int], Optional[str]]] = []
    with medtrust.Checker(llm=stub.spec, strategy="single") as c:
        r = c.run_batch(medec_small, tmp_path / "py.txt",
                        trace=tmp_path / "py.jsonl", jobs=3,
                        on_progress=lambda p, nid: seen.append((p, nid)))
    assert (tmp_path / "py.txt").read_bytes() == \
        (tmp_path / "cli.txt").read_bytes()
    assert r.submission() == (tmp_path / "cli.txt").read_text()
    cli_tr = {x["id"]: x for x in _untimed(
        json_lines((tmp_path / "cli.jsonl").read_text()))}
    py_tr = {x["id"]: x for x in _untimed(
        json_lines((tmp_path / "py.jsonl").read_text()))}
    assert py_tr == cli_tr
    assert (r.total, r.resumed, r.checked, r.failed) == (6, 0, 6, 0)
    assert r.usage["llm_calls"] == 6  # single: one call a note
    with open(medec_small, newline="", encoding="utf-8") as f:
        ids = [row["Text ID"] for row in csv.DictReader(f)]
    assert [n.id for n in r.notes] == ids  # the CSV's order
    # one call at the start, then one a note, the counts rising
    assert seen[0] == ({"total": 6, "resumed": 0, "checked": 0, "failed": 0,
                        "fallback": 0}, None)
    assert [p["checked"] for p, _ in seen[1:]] == [1, 2, 3, 4, 5, 6]
    assert sorted(n for _, n in seen[1:]) == sorted(cli_tr)
    journal = json_lines((tmp_path / "py.txt.journal").read_text())
    assert sorted(j["id"] for j in journal) == sorted(cli_tr)


def test_run_batch_resumes_from_its_journal(stub: Any, medec_small: Path,
                                            tmp_path: Path) -> None:
    out = tmp_path / "run.txt"
    with medtrust.Checker(llm=stub.spec, strategy="single") as c:
        full = c.run_batch(medec_small, out, trace=tmp_path / "t.jsonl")
        want = out.read_bytes()
        # a run killed after two notes: its journal holds two lines and
        # its trace a third, torn
        jp = Path(f"{out}.journal")
        jp.write_text("".join(jp.read_text().splitlines(True)[:2]))
        tr = (tmp_path / "t.jsonl").read_text().splitlines(True)
        (tmp_path / "t.jsonl").write_text("".join(tr[:3]) + '{"id":')
        out.unlink()
        before = stub.calls()
        r = c.run_batch(medec_small, out, trace=tmp_path / "t.jsonl",
                        resume=True)
    assert stub.calls() - before == 4  # only the four not journaled
    assert (r.resumed, r.checked, r.failed) == (2, 4, 0)
    assert sum(n.resumed for n in r.notes) == 2
    assert out.read_bytes() == want and r.submission() == full.submission()
    # one trace line a note, as an unbroken run's
    ids = [x["id"] for x in json_lines((tmp_path / "t.jsonl").read_text())]
    assert sorted(ids) == sorted(n.id for n in full.notes)


def test_failed_notes_are_reported_not_raised(medec_small: Path,
                                              tmp_path: Path) -> None:
    out = tmp_path / "dead.txt"
    with medtrust.Checker(llm="openai:http://127.0.0.1:9/v1#none",
                          strategy="single", timeout=2) as c:
        # three notes at once: their calls' retries overlap
        r = c.run_batch(medec_small, out, jobs=3, limit=3)
    assert (r.total, r.checked, r.failed) == (3, 3, 3)
    assert all(n.failed and n.error for n in r.notes)
    assert out.read_text() == "" and r.submission() == ""
    assert r.submission(with_failed=True).splitlines() == \
        [f"{n.id} 0 -1 NA" for n in r.notes]
    # the journal names why each failed, and a resume checks them again
    journal = json_lines(Path(f"{out}.journal").read_text())
    assert len(journal) == 3 and all("failed" in j for j in journal)


def test_a_bad_csv_is_named(tmp_path: Path, stub: Any) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("id,text\n1,x\n")
    with medtrust.Checker(llm=stub.spec, strategy="single") as c:
        try:
            c.run_batch(bad)
        except medtrust.ParseError as e:
            assert "missing columns 'Text ID' 'Text'" in str(e)
            assert str(bad) in str(e)
        else:
            raise AssertionError("a CSV without Text ID and Text was read")
        try:
            c.run_batch(tmp_path / "none.csv")
        except medtrust.Error as e:
            assert "none.csv" in str(e)
        else:
            raise AssertionError("a missing CSV was read")
    assert json.dumps(medtrust.BatchResult([], 0, 0, 0, 0, 0).submission()) \
        == '""'
