"""embed(): sentence vectors from any of medtrust's embedders."""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Dict, Iterable, List, Tuple, Union

from . import _lib
from ._lib import b
from ._util import check

# Open embedders by (spec, dims, normalize): opening USE-lite reads and
# checks a 28 MB weight file, so it is done once a process. An embedder
# takes one call at a time (include/medtrust/model.h): each has a lock.
_open: Dict[Tuple[str, int, bool], Tuple[int, threading.Lock]] = {}
_open_lock = threading.Lock()


def _embedder(spec: str, dims: int, normalize: bool) -> Tuple[int, threading.Lock]:
    key = (spec, dims, normalize)
    with _open_lock:
        if key not in _open:
            L = _lib.lib()
            p = _lib.EmbedderParams()
            L.mt_embedder_default_params(ctypes.byref(p))
            p.dims = dims
            p.normalize = int(normalize)
            h = ctypes.c_void_p()
            err = _lib.Error_()
            check(L.mt_embedder_open(b(spec), ctypes.byref(p),
                                     ctypes.byref(h), ctypes.byref(err)), err)
            _open[key] = (h.value, threading.Lock())
        return _open[key]


def close_embedders() -> None:
    """Closes the embedders ``embed`` keeps open (at exit by itself)."""
    with _open_lock:
        for h, _ in _open.values():
            _lib.lib().mt_embedder_close(h)
        _open.clear()


def embed(texts: Union[str, Iterable[str]], embedder: str = "use-lite", *,
          dims: int = 0, normalize: bool = True,
          numpy: Union[bool, None] = None) -> Any:
    """Embeds texts with a medtrust embedder, as ``medtrust embed`` does.

    Args:
        texts: one text or an iterable of texts.
        embedder: ``"use-lite"`` (built in), ``"gguf:PATH"`` or
            ``"openai:URL#MODEL"``.
        dims: keep the first N dimensions (Matryoshka), 0 = all.
        normalize: unit-length vectors (default).
        numpy: return a numpy array (True), lists (False), or a numpy array
            when numpy is installed (None, the default).

    Returns:
        a float32 ``numpy.ndarray`` of shape (n, d), or, without numpy, a
        list of n lists of d floats. The call releases the GIL.
    """
    items: List[str] = [texts] if isinstance(texts, str) else list(texts)
    h, lock = _embedder(embedder, dims, normalize)
    L = _lib.lib()
    d = L.mt_embedder_dims(h)
    n = len(items)
    enc = [t.encode("utf-8") for t in items]
    strs = (_lib.Str * max(n, 1))()
    for i, e in enumerate(enc):
        strs[i].p = e
        strs[i].n = len(e)
    np_mod = None
    if numpy is not False:
        try:
            import numpy as np_mod  # type: ignore[no-redef]
        except ImportError:
            if numpy:
                raise
    if np_mod is not None:
        arr = np_mod.zeros((n, d), dtype=np_mod.float32)
        out = arr.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
    else:
        buf = (ctypes.c_float * max(n * d, 1))()
        out = ctypes.cast(buf, ctypes.POINTER(ctypes.c_float))
    err = _lib.Error_()
    if n:
        with lock:
            check(L.mt_embedder_embed(h, strs, n, out, ctypes.byref(err)), err)
    if np_mod is not None:
        return arr
    return [list(buf[i * d:(i + 1) * d]) for i in range(n)]
