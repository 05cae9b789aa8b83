#!/usr/bin/env python3
"""medtrust from Python, start to finish: index a corpus, search it, check
MEDEC clinical notes against an OpenAI-compatible server (or a GGUF file)
and score the run with the official MEDIQA-CORR metrics.

    pip install --break-system-packages --no-build-isolation ./python
    python3 examples/quickstart.py --llm openai:http://127.0.0.1:8080/v1#model

Without --llm (or $MEDTRUST_LLM) it indexes and searches only. The data
sets are the ones `make demo` uses ($MEDTRUST_DATA, default ../shared/data
or ./data; see README, "Data sets").
"""

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
try:
    import medtrust
except ImportError:  # not installed: the checkout's package
    sys.path.insert(0, str(ROOT / "python"))
    import medtrust


def data_dir() -> Path:
    env = os.environ.get("MEDTRUST_DATA")
    if env:
        return Path(env)
    shared = ROOT.parent / "shared" / "data"
    return shared if (shared / "medquad").exists() else ROOT / "data"


def read_jsonl(path: Path, n: int):
    with open(path, encoding="utf-8") as f:
        for line in itertools.islice(f, n):
            yield json.loads(line)


def main() -> int:
    data = data_dir()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default="build/quickstart-db")
    ap.add_argument("--corpus", default=data / "medquad" / "corpus.jsonl")
    ap.add_argument("--docs", type=int, default=2000,
                    help="documents of the corpus to index (2000)")
    ap.add_argument("--embedder", default="use-lite",
                    help="use-lite (default), gguf:PATH, openai:... or none")
    ap.add_argument("--notes", default=data / "medec" /
                    "MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv")
    ap.add_argument("--n", type=int, default=5, help="notes to check (5)")
    ap.add_argument("--llm", default=os.environ.get("MEDTRUST_LLM"))
    ap.add_argument("--strategy", default="single",
                    help="react-reflex, guards or single (default)")
    a = ap.parse_args()

    # 1. A corpus store, indexed for BM25 and (with an embedder) vectors.
    with medtrust.Store(a.db) as store:
        added = store.add(read_jsonl(Path(a.corpus), a.docs), source="medquad")
        built = store.index(embedder=a.embedder, progress=True)
        print(f"indexed: {added.documents} new documents "
              f"({added.unchanged} unchanged), {built.chunks_added} chunks")

        # 2. Search.
        mode = "bm25" if a.embedder == "none" else "hybrid"
        for hit in store.search("How is glaucoma treated?", k=3, mode=mode):
            print(f"  {hit.rank}. {hit.score:.3f} {hit.id} {hit.title}")

    if not a.llm:
        print("no --llm (or MEDTRUST_LLM): skipping check and score")
        return 0

    # 3. Check notes: react-reflex searches the store built above.
    notes = medtrust.read_notes(a.notes, limit=a.n)
    with medtrust.Checker(db=a.db, llm=a.llm, strategy=a.strategy) as checker:
        results = []
        for r in checker.check_many(notes, jobs=4, return_exceptions=True):
            if isinstance(r, medtrust.Error):
                print(f"  failed: {r}")
                r = getattr(r, "result", None)
                if r is None:
                    continue
            print(f"  {r.submission_line()[:100]}")
            results.append(r)

    # 4. Score against the reference (the official metrics).
    s = medtrust.score(a.notes, results, name="quickstart")
    print(f"error flag accuracy {s['error_flag_accuracy']:.3f}, "
          f"sentence accuracy {s['error_sentence_accuracy']:.3f}, "
          f"{len(results)} of {len(notes)} notes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
