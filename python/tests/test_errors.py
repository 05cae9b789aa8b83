"""Errors: one medtrust.Error subclass per C status, with the C message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import medtrust
from medtrust import errors
from conftest import ROOT, cli


def test_one_class_per_status_in_status_h() -> None:
    """The classes follow include/medtrust/status.h's table, in order."""
    text = (ROOT / "include" / "medtrust" / "status.h").read_text()
    names = re.findall(r"^\s*X\((\w+),", text, re.M)
    assert names[0] == "OK"
    for code, name in enumerate(names[1:], start=1):
        cls = errors.BY_CODE[code]
        assert cls.status == name and cls.code == code
        assert issubclass(cls, medtrust.Error)
    assert len(errors.BY_CODE) == len(names) - 1


def test_missing_store_raises_with_the_path(tmp_path: Path) -> None:
    with pytest.raises(medtrust.Error) as ei:
        medtrust.Store(tmp_path / "none", create=False)
    assert str(tmp_path / "none") in str(ei.value)
    assert ei.value.status in ("ENOTFOUND", "EIO", "EDB")


def test_bad_arguments_raise_invalid_argument(tmp_path: Path) -> None:
    with medtrust.Store(tmp_path / "db") as st:
        with pytest.raises(medtrust.InvalidArgumentError):
            st.search("x", mode="fuzzy")
        with pytest.raises(ValueError):  # InvalidArgumentError is one
            st.search("x", k=0)
        with pytest.raises(medtrust.InvalidArgumentError) as ei:
            st.add([{"id": "a"}])
        assert "'text'" in str(ei.value)
        with pytest.raises(medtrust.InvalidArgumentError):
            st.add([{"text": "no id"}])


def test_settings_past_the_clis_bounds_raise_naming_them(tmp_path: Path) -> None:
    """The library's entry points check their settings tables (as
    mt_server_start does): Python gets the CLI's bounds and message
    parts, before any model or store is opened."""
    with pytest.raises(medtrust.InvalidArgumentError) as ei:
        medtrust.Answerer(tmp_path / "none", "openai:http://127.0.0.1:9#x",
                          temperature=3)
    assert str(ei.value).endswith(
        "mt_qa_params: temperature is 3, not in 0..2"), str(ei.value)
    r = cli("ask", "--db", str(tmp_path / "none"), "--temperature", "3", "q",
            check=False)
    assert r.returncode != 0 and "--temperature" in r.stderr
    assert "0..2" in r.stderr, r.stderr  # the same bounds
    with pytest.raises(medtrust.InvalidArgumentError) as ei:
        medtrust.Answerer(tmp_path / "none", "openai:http://127.0.0.1:9#x",
                          max_tokens=8)
    assert "max-tokens is 8, not in 16..65536" in str(ei.value)
    with medtrust.Store(tmp_path / "db") as st:
        st.add([{"id": "1", "text": "some text"}])
        with pytest.raises(medtrust.InvalidArgumentError) as ei:
            st.index(embedder="none", threads=65)
        assert "mt_index_run_params: threads is 65, not in 0..64" in \
            str(ei.value)
        st.index(embedder="none", threads=64)  # the bound itself is taken
        assert [h.id for h in st.search("text", mode="bm25")] == ["1"]


def test_search_without_an_index_says_how_to_build_one(tmp_path: Path) -> None:
    with medtrust.Store(tmp_path / "db") as st:
        st.add([{"id": "1", "text": "some text"}])
        with pytest.raises(medtrust.Error) as ei:
            st.search("text", mode="bm25")
        assert "index" in str(ei.value)
        st.index(embedder="none")
        with pytest.raises(medtrust.InvalidArgumentError) as ei:
            st.search("text", mode="dense")
        assert "no vectors" in str(ei.value) and "use-lite" in str(ei.value)


def test_closed_store_raises(tmp_path: Path) -> None:
    st = medtrust.Store(tmp_path / "db")
    st.close()
    st.close()
    with pytest.raises(medtrust.InvalidArgumentError):
        st.add([{"id": "1", "text": "x"}])


def test_a_failed_batch_keeps_the_committed_ones(tmp_path: Path) -> None:
    """An exception part way through add() rolls back only the batch being
    written, as `medtrust index` keeps every committed batch."""
    docs = [{"id": str(i), "text": f"document number {i}"} for i in range(5)]
    docs.append({"id": "bad"})  # no text
    with medtrust.Store(tmp_path / "db") as st:
        with pytest.raises(medtrust.InvalidArgumentError):
            st.add(docs, batch_size=2)
        assert st.stats()["total"]["documents"] == 4
