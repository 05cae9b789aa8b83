"""pip install ./python with Debian's pip, no index, no build isolation:
the installed package imports outside the source tree and loads the
library it was installed against."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import BUILD, ROOT


def test_pip_install_finds_the_library_it_was_built_with(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = dict(os.environ, MEDTRUST_BUILD_DIR=str(BUILD),
               PIP_NO_CACHE_DIR="1")
    env.pop("LD_PRELOAD", None)
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation",
         "--no-index", "--no-deps", "--target", str(site), str(ROOT / "python")],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    assert (site / "medtrust" / "py.typed").exists()
    # a fresh process, elsewhere, without MEDTRUST_LIB or the source tree
    env = dict(os.environ, PYTHONPATH=str(site))
    env.pop("MEDTRUST_LIB", None)
    code = ("import medtrust, sys\n"
            "assert 'python/medtrust' not in medtrust.__file__\n"
            "print(medtrust.library_path())\n"
            "st = medtrust.Store(sys.argv[1]); st.add([{'id': 1, 'text': 'x y'}])\n"
            "st.index(embedder='none'); print(len(st.search('x', mode='bm25')))\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "db")],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    path, n = r.stdout.split()
    assert Path(path).resolve() == (BUILD / "libmedtrust.so.0").resolve()
    assert n == "1"


def test_medtrust_lib_names_the_library(tmp_path: Path) -> None:
    env = dict(os.environ, MEDTRUST_LIB=str(tmp_path / "nope.so"),
               PYTHONPATH=str(ROOT / "python"))
    r = subprocess.run([sys.executable, "-c",
                        "import medtrust; medtrust.version()"],
                       capture_output=True, text=True, env=env)
    assert r.returncode != 0
    assert "MEDTRUST_LIB" in r.stderr and "nope.so" in r.stderr
