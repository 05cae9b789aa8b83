"""Golden values of MedGuards' KPCS ROUGE-1 from the real packages.

Run with the venv scripts/bootstrap makes (third_party/venv: rouge_score
0.1.2 and its nltk, rouge-chinese 1.0.3, jieba 0.42.1):

  third_party/venv/bin/python tests/golden/rouge_score/make.py stems \
      < tests/golden/rouge_score/words.txt > tests/golden/rouge_score/stems.tsv
  third_party/venv/bin/python tests/golden/rouge_score/make.py pairs \
      < tests/golden/rouge_score/pairs.in > tests/golden/rouge_score/pairs.tsv

stems: each input word -> "word<TAB>stem" as rouge_score stems it (NLTK's
PorterStemmer, NLTK_EXTENSIONS; rouge_score stems only words longer than 3
characters, but every word is listed here).
datastems FILE: every distinct token of FILE with its stem (the unit test
runs it on the MEDEC validation split when the venv is there).
pairs: each "hyp<TAB>ref" line -> "hyp<TAB>ref<TAB>F" with F = rouge_score's
rouge1 fmeasure of score(ref, hyp), printed with repr (17 digits), as
MedGuards' evaluate_correction_keywords calls it.
"""
import sys

from nltk.stem import porter
from rouge_score import rouge_scorer


def stems():
    st = porter.PorterStemmer()
    for line in sys.stdin:
        w = line.strip()
        if w:
            print(f"{w}\t{st.stem(w)}")


def pairs():
    sc = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        hyp, ref = line.split("\t")
        f = sc.score(ref, hyp)["rouge1"].fmeasure
        print(f"{hyp}\t{ref}\t{f!r}")


def datastems():
    """Every distinct token of the file argv[2] as rouge_score's tokenizer
    splits it (unstemmed), each with NLTK's stem."""
    from rouge_score import tokenize
    st = porter.PorterStemmer()
    words = set()
    with open(sys.argv[2], encoding="utf-8", errors="replace") as f:
        for line in f:
            words.update(tokenize.tokenize(line, None))
    for w in sorted(words):
        print(f"{w}\t{st.stem(w)}")


{"stems": stems, "pairs": pairs, "datastems": datastems}[sys.argv[1]]()
