"""Chinese KPCS reference values from the real packages: jieba 0.42.1 and
rouge-chinese 1.0.3, as MedGuards' eval_CN.py calls them. Run with the venv
scripts/bootstrap makes (third_party/venv):

  third_party/venv/bin/python tests/golden/jieba/make.py pairs \
      < tests/golden/jieba/pairs.in > tests/golden/jieba/pairs.tsv
  third_party/venv/bin/python tests/golden/jieba/make.py cut FILE.csv...

pairs: each "hyp<TAB>ref" line (\\n and \\t written as backslash escapes)
-> "hyp<TAB>ref<TAB>F" with F the rouge-1 "f" of
Rouge().get_scores(' '.join(jieba.cut(hyp)), ' '.join(jieba.cut(ref)))[0],
printed with repr (17 digits): NLGMetrics.compute_rouge in eval_CN.py.
cut: every distinct non-empty text of the CSV files' cells (the whole
cell and each of its lines), one a line: the text's UTF-8 bytes in hex,
a TAB, and the byte lengths of jieba.cut(text)'s tokens (they cover the
text in order), space-separated. The unit test test_segment_zh runs it on
MedErrBench's Chinese files and compares src/text/segment_zh.c with it.
"""
import csv
import logging
import sys

import jieba

jieba.setLogLevel(logging.WARNING)


def unescape(s):
    return s.replace("\\t", "\t").replace("\\n", "\n")


def pairs():
    from rouge_chinese import Rouge
    rouge = Rouge()
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        hyp, ref = line.split("\t")
        h = " ".join(jieba.cut(unescape(hyp)))
        r = " ".join(jieba.cut(unescape(ref)))
        f = rouge.get_scores(h, r)[0]["rouge-1"]["f"]
        print(f"{hyp}\t{ref}\t{f!r}")


def texts(paths):
    csv.field_size_limit(1 << 30)
    seen = set()
    for p in paths:
        with open(p, encoding="utf-8", newline="") as f:
            for row in csv.reader(f):
                for cell in row:
                    for t in [cell] + cell.split("\n"):
                        if t and t not in seen:
                            seen.add(t)
                            yield t


def cut():
    for t in texts(sys.argv[2:]):
        toks = list(jieba.cut(t))
        assert "".join(toks) == t
        lens = " ".join(str(len(x.encode("utf-8"))) for x in toks)
        print(f"{t.encode('utf-8').hex()}\t{lens}")


{"pairs": pairs, "cut": cut}[sys.argv[1]]()
