"""score(): the MEDIQA-CORR 2024 scorer (``medtrust score``)."""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any, Dict, Iterable, Optional, Union

from . import _lib
from ._lib import b
from ._util import check


class Score(Dict[str, Any]):
    """``medtrust score --json``'s object for one run, as a dict (notes,
    error_flag_accuracy, error_sentence_accuracy, composite, pairs_mean,
    ci, metrics_used, breakdown, warnings...), with ``to_pandas()``."""

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row per metric: its composite (over all
        notes, the official figure), its mean over the scored pairs and its
        95% bootstrap interval when given; the accuracies are rows too.
        Needs pandas (Debian's python3-pandas)."""
        import pandas as pd  # type: ignore[import-untyped]

        rows = []
        ci = self.get("ci", {}) or {}
        for key in ("error_flag_accuracy", "error_sentence_accuracy"):
            if key in self:
                rows.append({"metric": key, "composite": self[key],
                             "pairs_mean": None, **_ci(ci.get(key))})
        for m, v in (self.get("composite", {}) or {}).items():
            rows.append({"metric": m, "composite": v,
                         "pairs_mean": (self.get("pairs_mean") or {}).get(m),
                         **_ci(ci.get(m))})
        return pd.DataFrame(rows).set_index("metric")


def _ci(v: Any) -> Dict[str, Any]:
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return {"ci_lo": v[0], "ci_hi": v[1]}
    if isinstance(v, dict):
        return {"ci_lo": v.get("lo"), "ci_hi": v.get("hi")}
    return {"ci_lo": None, "ci_hi": None}


PredArg = Union[str, "os.PathLike[str]", Iterable[Any]]


def score(ref_csv: Union[str, "os.PathLike[str]"], pred: PredArg, *,
          name: Optional[str] = None) -> Score:
    """Scores a run against a MEDEC-format reference CSV exactly as the
    official MEDIQA-CORR 2024 script does (and ``medtrust score``: ROUGE,
    KPCS when the reference has Important Words, bootstrap intervals).

    Args:
        ref_csv: the reference notes (Text ID, Error Flag, Error Sentence
            ID, Corrected Sentence...).
        pred: a submission file's path, or its lines, or CheckResults
            (their submission lines).
        name: the run's name in the result (default: the file's path, or
            "python").
    """
    L = _lib.lib()
    ref = ctypes.c_void_p()
    sub = ctypes.c_void_p()
    res = ctypes.c_void_p()
    out = ctypes.c_void_p()
    err = _lib.Error_()
    try:
        check(L.mt_eval_ref_load(b(os.fspath(ref_csv)), ctypes.byref(ref),
                                 ctypes.byref(err)), err)
        if isinstance(pred, (str, os.PathLike)):
            run = name or os.fspath(pred)
            check(L.mt_eval_sub_load(b(os.fspath(pred)), ctypes.byref(sub),
                                     ctypes.byref(err)), err)
        else:
            run = name or "python"
            lines = [getattr(p, "submission", p) for p in pred]
            data = "".join(str(x).rstrip("\n") + "\n" for x in lines)
            raw = data.encode("utf-8")
            check(L.mt_eval_sub_parse(b(run), raw, len(raw),
                                      ctypes.byref(sub), ctypes.byref(err)),
                  err)
        for i in range(L.mt_eval_sub_ndiag(sub)):
            _lib.log.warning("%s", L.mt_eval_sub_diag(sub, i).decode())
        check(L.mt_eval_score(ref, sub, None, ctypes.byref(res),
                              ctypes.byref(err)), err)
        check(L.mt_eval_result_json(res, ref, b(run), ctypes.byref(out),
                                    ctypes.byref(err)), err)
        return Score(json.loads(_lib.take_string(out.value) or "{}"))
    finally:
        if res.value:
            L.mt_eval_result_free(res)
        if sub.value:
            L.mt_eval_sub_free(sub)
        if ref.value:
            L.mt_eval_ref_free(ref)
