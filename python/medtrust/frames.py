"""Notebook helpers: MEDEC notes from a CSV, results as pandas frames."""

from __future__ import annotations

import csv
import dataclasses
import os
from typing import Any, Dict, Iterable, List, Optional, Union


def read_notes(path: Union[str, "os.PathLike[str]"],
               limit: Optional[int] = None) -> List[Dict[str, Any]]:
    """The notes of a MEDEC-format CSV (``Text ID``, ``Text`` and, when
    present, ``Sentences``) as the dicts ``Checker.check_many`` takes,
    in file order: what ``medtrust mediqa --data`` checks."""
    out: List[Dict[str, Any]] = []
    with open(path, newline="", encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            if limit is not None and len(out) >= limit:
                break
            note: Dict[str, Any] = {"id": row["Text ID"], "text": row["Text"]}
            if row.get("Sentences"):
                note["sentences"] = row["Sentences"]
            out.append(note)
    return out


def to_pandas(items: Iterable[Any]) -> Any:
    """A pandas DataFrame with one row per item: Hits, CheckResults (their
    trace left out: it is nested), Answers, or dicts. Needs pandas
    (Debian's python3-pandas)."""
    import pandas as pd  # type: ignore[import-untyped]

    rows = []
    for it in items:
        if dataclasses.is_dataclass(it) and not isinstance(it, type):
            row = dataclasses.asdict(it)
        elif isinstance(it, dict):
            row = dict(it)
        else:
            raise TypeError(f"cannot make a row of {type(it).__name__}")
        row.pop("trace", None)
        row.pop("raw", None)
        rows.append(row)
    return pd.DataFrame(rows)
