#!/usr/bin/env python3
"""Writes tests/eval/rouge_golden.tsv with the real `rouge` package
(pltrdy/rouge 1.0.1, what the official MEDIQA-CORR 2024 scorer imports):
Rouge().get_scores(hyp, ref)[0], rouge-1, rouge-2 and rouge-l, each f, p, r.

    third_party/venv/bin/python tests/eval/rouge_golden.py ROUGE_DIR \
        tests/eval/rouge_pairs.tsv > tests/eval/rouge_golden.tsv

ROUGE_DIR holds pltrdy's package as a `rouge` folder: third_party/rouge-pltrdy
(scripts/bootstrap) or ../shared/reference. It goes first on sys.path, ahead
of the `rouge` module the rouge-chinese wheel also installs.

Input: one pair a line, "hyp<TAB>ref", with \\t, \\n and \\\\ escapes; 300
generated pairs (fixed seed) from a small vocabulary follow. Output:
"hyp<TAB>ref<TAB>9 numbers" (r1 f p r, r2 f p r, rl f p r, %.17g), or
"hyp<TAB>ref<TAB>EMPTY" where the package raises ValueError.
"""
import random
import sys


def load_rouge(folder):
    """pltrdy's Rouge class from folder, never rouge-chinese's look-alike."""
    sys.path.insert(0, folder)
    for m in [m for m in sys.modules if m == "rouge" or m.startswith("rouge.")]:
        del sys.modules[m]
    import rouge
    if hasattr(rouge.Rouge, "cut_sent"):  # rouge-chinese's
        raise SystemExit("%s: not pltrdy's rouge" % rouge.__file__)
    return rouge.Rouge


def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append({"t": "\t", "n": "\n", "\\": "\\"}.get(s[i + 1],
                                                              s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def escape(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def generated(count, seed):
    rnd = random.Random(seed)
    vocab = ["the", "The", "dose", "mg", "is", "a", "patient", "was",
             "given", "10", "38.5", "Treatment", "treatment", "of", "and",
             "x", "y", ",", "\"", "naïve", "β-blocker", "肺炎"]
    seps = [" ", " ", " ", "  ", "\t", ". ", ".", " .", "\n", ".. "]

    def text():
        k = rnd.randint(0, 12)
        s = "".join(rnd.choice(vocab) + rnd.choice(seps) for _ in range(k))
        return s + rnd.choice(["", ".", " ", "x"])
    return [(text(), text()) for _ in range(count)]


def main():
    scorer = load_rouge(sys.argv[1])()
    pairs = []
    with open(sys.argv[2], encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            h, r = line.split("\t")
            pairs.append((unescape(h), unescape(r)))
    pairs += generated(300, 20240314)
    for h, r in pairs:
        try:
            s = scorer.get_scores(h, r)[0]
            nums = " ".join("%.17g" % s[k][x]
                            for k in ("rouge-1", "rouge-2", "rouge-l")
                            for x in "fpr")
        except ValueError:
            nums = "EMPTY"
        print("%s\t%s\t%s" % (escape(h), escape(r), nums))


if __name__ == "__main__":
    main()
