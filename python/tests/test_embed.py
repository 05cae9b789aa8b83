"""embed(): numpy and lists, the same vectors as `medtrust embed`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import medtrust
from conftest import ROOT, cli, json_lines, sub_env

TEXTS = ["Aspirin lowers fever.", "Metformin treats type 2 diabetes.",
         "Glaucoma damages the optic nerve."]


def test_embed_numpy_matches_cli() -> None:
    np = pytest.importorskip("numpy")
    v = medtrust.embed(TEXTS)
    assert isinstance(v, np.ndarray) and v.dtype == np.float32
    assert v.shape == (3, 512)
    want = json_lines(cli("embed", "--embedder", "use-lite", "--json",
                          *TEXTS).stdout)
    for row, w in zip(v, want):
        assert row.tolist() == pytest.approx(w["vector"], abs=1e-6)
    assert float((v[0] ** 2).sum()) == pytest.approx(1.0, abs=1e-5)


def test_embed_dims_and_single_text() -> None:
    v = medtrust.embed("one text", dims=64)
    assert v.shape == (1, 64)
    assert medtrust.embed([]).shape == (0, 512)


def test_embed_without_numpy_gives_lists() -> None:
    """In a Python where numpy cannot be imported, lists of floats equal to
    the numpy values."""
    code = (
        "import sys, json; sys.modules['numpy'] = None\n"
        "import medtrust\n"
        f"v = medtrust.embed({TEXTS!r})\n"
        "assert type(v) is list and type(v[0]) is list\n"
        "print(json.dumps(v))\n")
    env = sub_env(PYTHONPATH=str(ROOT / "python"))
    env["LD_PRELOAD"] = __import__("os").environ.get("LD_PRELOAD", "")
    env["ASAN_OPTIONS"] = __import__("os").environ.get("ASAN_OPTIONS", "")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    lists = json.loads(r.stdout)
    np = pytest.importorskip("numpy")
    assert np.allclose(np.array(lists, dtype=np.float32),
                       medtrust.embed(TEXTS), atol=1e-7)
    assert np.allclose(np.array(medtrust.embed(TEXTS, numpy=False)),
                       np.array(lists), atol=1e-7)


def test_embed_unknown_embedder_raises() -> None:
    with pytest.raises(medtrust.Error) as ei:
        medtrust.embed(["x"], embedder="nosuch:thing")
    assert ei.value.message
