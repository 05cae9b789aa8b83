"""Real models: tiny random-weight GGUFs (make_tiny_gguf, real tokenizers)
run in-process by the library's llama.cpp (found beside libmedtrust.so)
and behind a real llama-server; Python gives what the binary gives."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

import medtrust
from conftest import BUILD, NOTE, ROOT, cli, json_lines, sub_env

LLAMA_SERVER = ROOT / "third_party" / "llama-server" / "bin" / "llama-server"
SMALL = dict(max_tokens=10, steps=1, rounds=1, evaluators=1, eval_quorum=1)
SMALL_CLI = ["--max-tokens", "10", "--steps", "1", "--rounds", "1",
             "--evaluators", "1", "--eval-quorum", "1"]


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    d = tmp_path_factory.mktemp("gguf")
    out = {}
    for kind, size in (("chat", "small-vocab"), ("embed", "tiny")):
        p = d / f"{kind}.gguf"
        subprocess.run([str(BUILD / "fixtures" / "make_tiny_gguf"), kind,
                        str(p), str(ROOT / "third_party" / "llama.cpp" /
                                    "models"), size],
                       check=True, capture_output=True, env=sub_env())
        out[kind] = p
    return out


def _untimed(o: Any) -> Any:
    if isinstance(o, dict):
        return {k: _untimed(v) for k, v in o.items()
                if k not in ("ms", "seconds", "endpoint")}
    if isinstance(o, list):
        return [_untimed(v) for v in o]
    return o


def _check_both(spec: str, tmp_path: Path) -> None:
    """Python's check and `medtrust check` on the same model: the same
    verdict (or the same failure) and the same trace."""
    note = tmp_path / "note.txt"
    note.write_text(NOTE)
    r = cli("check", "--llm", spec, "--strategy", "single", *SMALL_CLI,
            "--json", str(note), check=False)
    assert r.returncode in (0, 1), r.stderr[-1500:]
    want = json.loads(r.stdout)
    with medtrust.Checker(llm=spec, strategy="single", **SMALL) as c:
        try:
            got = c.check({"id": str(note), "text": NOTE})
            assert r.returncode == 0, r.stderr[-800:]
        except medtrust.ModelError as e:  # a random model's botched reply
            assert r.returncode == 1 and want.get("error")
            got = e.result  # type: ignore[attr-defined]
    assert got.fallback == want["fallback"]
    assert (int(got.error_flag), got.sentence_id, got.corrected_sentence) == \
        (want["error_flag"], want["error_sentence_id"],
         want["corrected_sentence"])
    assert _untimed(got.trace) == _untimed(want["trace"])
    assert got.usage["llm_calls"] >= 1


def test_gguf_in_process(gguf: Dict[str, Path], tmp_path: Path) -> None:
    _check_both(f"gguf:{gguf['chat']}", tmp_path)


def test_gguf_embedder_matches_cli(gguf: Dict[str, Path]) -> None:
    texts = ["chest pain radiating to the left arm", "renal failure"]
    spec = f"gguf:{gguf['embed']}"
    want = json_lines(cli("embed", "--embedder", spec, "--json",
                          *texts).stdout)
    got = medtrust.embed(texts, embedder=spec, numpy=False)
    assert len(got) == 2 and len(got[0]) == len(want[0]["vector"]) > 0
    for g, w in zip(got, want):
        assert g == pytest.approx(w["vector"], abs=1e-6)


@pytest.fixture(scope="module")
def llama_server(gguf: Dict[str, Path],
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not LLAMA_SERVER.exists():
        pytest.fail(f"{LLAMA_SERVER} missing: run make bootstrap")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    log = open(tmp_path_factory.mktemp("ls") / "llama-server.log", "w")
    p = subprocess.Popen([str(LLAMA_SERVER), "-m", str(gguf["chat"]),
                          "--host", "127.0.0.1", "--port", str(port), "-t",
                          "1", "--no-webui", "-np", "2", "-c", "8192"],
                         stdout=log, stderr=subprocess.STDOUT, env=sub_env())
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(url + "/health", timeout=2)
                break
            except OSError:
                if p.poll() is not None:
                    pytest.fail("llama-server exited: see " + log.name)
                time.sleep(0.5)
        else:
            pytest.fail("llama-server did not come up in 120 s")
        yield f"openai:{url}#chat"
    finally:
        p.terminate()
        p.wait(timeout=30)
        log.close()


def test_llama_server(llama_server: str, tmp_path: Path) -> None:
    _check_both(llama_server, tmp_path)
