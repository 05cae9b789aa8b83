"""The ctypes structures mirror the C headers: sizes and every field's
offset, compared with what the C compiler says."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest

from medtrust import _lib
from conftest import ROOT

STRUCTS = {
    "mt_error": _lib.Error_,
    "mt_str": _lib.Str,
    "mt_store_params": _lib.StoreParams,
    "mt_doc": _lib.Doc,
    "mt_put_result": _lib.PutResult,
    "mt_store_counts": _lib.StoreCounts,
    "mt_index_build_params": _lib.IndexBuildParams,
    "mt_index_build_result": _lib.IndexBuildResult,
    "mt_index_update_params": _lib.IndexUpdateParams,
    "mt_meta_cond": _lib.MetaCond,
    "mt_search_params": _lib.SearchParams,
    "mt_search_hit": _lib.SearchHit,
    "mt_search_result": _lib.SearchResult,
    "mt_retriever_params": _lib.RetrieverParams,
    "mt_embedder_params": _lib.EmbedderParams,
    "mt_import_params": _lib.ImportParams,
    "mt_import_result": _lib.ImportResult,
}
STRUCTS.update(getattr(_lib, "MORE_STRUCTS", {}))


def test_structures_match_the_headers(tmp_path: Path) -> None:
    lines = ["#include <stddef.h>", "#include <stdio.h>"]
    lines += [f'#include "medtrust/{h.name}"'
              for h in sorted((ROOT / "include" / "medtrust").glob("*.h"))]
    lines.append("int main(void) {")
    for cname, cls in STRUCTS.items():
        lines.append(f'printf("{cname} %zu\\n", sizeof(struct {cname}));')
        for f in cls._fields_:
            lines.append(f'printf("{cname}.{f[0]} %zu\\n", '
                         f"offsetof(struct {cname}, {f[0]}));")
    lines.append("return 0; }")
    src = tmp_path / "abi.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "abi"
    subprocess.run(["cc", "-std=c11", "-I", str(ROOT / "include"), "-o",
                    str(exe), str(src)], check=True, capture_output=True)
    c = dict(line.rsplit(" ", 1) for line in
             subprocess.run([str(exe)], capture_output=True, text=True,
                            check=True).stdout.splitlines())
    for cname, cls in STRUCTS.items():
        assert int(c[cname]) == ctypes.sizeof(cls), cname
        for f in cls._fields_:
            assert int(c[f"{cname}.{f[0]}"]) == getattr(cls, f[0]).offset, \
                f"{cname}.{f[0]}"
