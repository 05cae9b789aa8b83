"""Store: add, index, search, stats and import against real stores, and
the same results as the medtrust binary on the same inputs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import List

import pytest

import medtrust
from conftest import DATA, cli, json_lines

QUERIES = ["What are the symptoms of glaucoma?", "treatment for diabetes",
           "genetic changes related to", "high blood pressure in pregnancy"]


def cli_search(db: Path, q: str, *args: str) -> List[dict]:
    return json_lines(cli("search", "--db", str(db), "--group", "chunks",
                          "--json", *args, q).stdout)


def test_index_keeps_the_build_status_file_while_it_builds(
        tmp_path: Path) -> None:
    """As medtrust index does (mt_index_run): DIR/index-build.json says how
    far the build is while it runs, for a server on the same store, and is
    gone when it ends."""
    seen: List[dict] = []
    status = tmp_path / "db" / "index-build.json"

    def progress(done: int, total: int) -> None:
        if status.exists():
            seen.append(json.loads(status.read_text()))

    with medtrust.Store(tmp_path / "db") as st:
        st.add([{"id": f"d{i}", "text": f"document number {i}"}
                for i in range(5)])
        assert st.index(embedder="none", progress=progress).chunks_added == 5
    assert seen, "no status file seen during the build"
    assert seen[0]["pid"] == os.getpid() and seen[0]["embedder"] == "none"
    assert seen[0]["total"] == 5 and 0 <= seen[0]["done"] <= 5
    assert not status.exists()


def test_add_index_search_returns_hits_with_fields(tmp_path: Path) -> None:
    with medtrust.Store(tmp_path / "db") as st:
        r = st.add([
            {"id": "a1", "title": "Aspirin", "text": "Aspirin lowers fever.",
             "year": 2010, "url": "https://example.org/a1"},
            {"id": 12345, "text": "Metformin treats type 2 diabetes."},
        ], source="mine")
        assert r == medtrust.AddResult(documents=2, unchanged=0, chunks=2)
        ir = st.index(embedder="none")
        assert ir.chunks_added == 2 and ir.segments == 1
        hits = st.search("aspirin fever", mode="bm25")
        assert [h.id for h in hits] == ["a1"]
        h = hits[0]
        assert h.title == "Aspirin" and h.text == "Aspirin lowers fever."
        assert h.metadata == {"year": 2010, "url": "https://example.org/a1"}
        assert h.url == "https://example.org/a1"
        assert h.rank == 1 and h.source == "mine" and h.score > 0
        h2 = st.search("metformin", mode="bm25")[0]
        assert h2.id == "12345"
        assert h2.url == "https://pubmed.ncbi.nlm.nih.gov/12345/"


def test_search_matches_cli_on_the_cli_built_store(cli_store: Path) -> None:
    with medtrust.Store(cli_store, create=False) as st:
        for q in QUERIES:
            want = cli_search(cli_store, q, "--mode", "bm25", "-k", "10")
            got = st.search(q, k=10, mode="bm25")
            assert [h.id for h in got] == [w["doc_id"] for w in want], q
            assert [h.chunk_id for h in got] == [w["chunk_id"] for w in want]
            for h, w in zip(got, want):
                assert h.score == pytest.approx(w["score"], rel=1e-6)
                assert h.text == w["text"] and h.title == w.get("title")


def test_python_built_store_searches_as_the_cli_built(cli_store: Path,
                                                      py_store: Path) -> None:
    for q in QUERIES:
        a = cli_search(cli_store, q, "--mode", "bm25")
        b = cli_search(py_store, q, "--mode", "bm25")
        assert [(h["doc_id"], h["score"], h["text"]) for h in a] == \
            [(h["doc_id"], h["score"], h["text"]) for h in b], q


def test_readding_the_same_documents_changes_nothing(py_store: Path,
                                                     docs: List[dict],
                                                     corpus: Path) -> None:
    with medtrust.Store(py_store) as st:
        r = st.add(docs, source=corpus.stem)
        assert r.documents == 0 and r.unchanged == len(docs)
        assert st.index().chunks_added == 0


def test_cli_ingest_and_python_add_store_the_same_documents(
        cli_store: Path, docs: List[dict], corpus: Path, tmp_path: Path) -> None:
    """Documents the CLI ingested are identical (text, title, metadata) to
    the ones Python adds: none is rewritten."""
    import shutil
    db = tmp_path / "copy"
    shutil.copytree(cli_store, db)
    with medtrust.Store(db) as st:
        r = st.add(docs, source=corpus.stem)
    assert r.unchanged == len(docs) and r.documents == 0


def test_stats_match_cli(cli_store: Path) -> None:
    lines = json_lines(cli("stats", "--db", str(cli_store), "--json").stdout)
    with medtrust.Store(cli_store, create=False) as st:
        s = st.stats()
    counts = [x for x in lines if "documents" in x]
    assert s["sources"] == [x for x in counts if x.get("source")]
    total = [x for x in counts if "source" not in x or x["source"] is None][0]
    total.pop("source", None)
    assert s["total"] == total
    idx = [x["index"] for x in lines if "index" in x][0]
    assert s["index"] == {"embedder": idx["embedder"] or None,
                          "dims": idx["dims"]}


def test_search_options(py_store: Path) -> None:
    with medtrust.Store(py_store) as st:
        hits = st.search("leukemia", k=3, mode="bm25")
        assert len(hits) == 3 and [h.rank for h in hits] == [1, 2, 3]
        with pytest.raises(medtrust.NotFoundError) as ei:
            st.search("leukemia", mode="bm25", source="nope")
        assert "no source named 'nope'" in str(ei.value)
        assert st.search("leukemia", mode="bm25", source="medquad")
        assert st.search("leukemia", mode="bm25",
                         with_metadata=False)[0].metadata == {}
        assert st.search("the of and", mode="bm25") == []


def test_import_matches_cli(tmp_path: Path) -> None:
    src = DATA / "formats" / "medquad"
    assert src.exists(), src
    a, b = tmp_path / "cli", tmp_path / "py"
    cli("import", "medquad", "--db", str(a), "--no-index", str(src),
        check=False)
    with medtrust.Store(b) as st:
        res = st.import_("medquad", [str(src)], index=False)
    ca = json_lines(cli("stats", "--db", str(a), "--json").stdout)
    cb = json_lines(cli("stats", "--db", str(b), "--json").stdout)
    assert ca == cb
    assert res["documents"] > 0
    assert res["documents"] + res["unchanged"] == \
        [x for x in cb if x.get("source") is None and "documents" in x][0][
            "documents"]


def test_hybrid_search_matches_cli(docs: List[dict], tmp_path: Path) -> None:
    """USE-lite vectors built from Python; hybrid and dense searches give
    the binary's hits and scores."""
    db = tmp_path / "db"
    with medtrust.Store(db) as st:
        st.add(docs[:40], source="mq")
        st.index(embedder="use-lite")
        assert st.stats()["index"]["embedder"] == "use-lite"
        for mode in ("hybrid", "dense"):
            for q in QUERIES[:2]:
                want = cli_search(db, q, "--mode", mode, "-k", "5")
                got = st.search(q, k=5, mode=mode)
                assert [h.chunk_id for h in got] == \
                    [w["chunk_id"] for w in want], (mode, q)
                for h, w in zip(got, want):
                    assert h.score == pytest.approx(w["score"], rel=1e-5)
