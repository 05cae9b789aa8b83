"""The ctypes structures mirror the C headers: sizes and every field's
offset, compared with what the C compiler says."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest

from medtrust import _lib
from conftest import ROOT

STRUCTS = _lib.STRUCTS


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


def test_the_library_reports_the_same_sizes() -> None:
    """mt_struct_size, which the package checks at load, knows every
    mirrored struct and agrees with ctypes."""
    L = _lib.lib()
    for name, cls in STRUCTS.items():
        assert L.mt_struct_size(name.encode()) == ctypes.sizeof(cls), name
    assert L.mt_struct_size(b"mt_no_such_struct") == 0


def test_a_mismatched_layout_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    class Short(ctypes.Structure):
        _fields_ = [("status", ctypes.c_int)]
    monkeypatch.setitem(_lib.STRUCTS, "mt_error", Short)
    with pytest.raises(OSError) as ei:
        _lib._Lib()
    assert "mt_error (516 bytes, the package's 4)" in str(ei.value)
