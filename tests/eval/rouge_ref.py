#!/usr/bin/env python3
"""Reference ROUGE for medtrust's golden tests (Python 3 standard library).

Re-implements, independently, what the `rouge` package (pltrdy/rouge 1.0.1,
used by the official MEDIQA-CORR 2024 scorer) computes for
Rouge().get_scores(hyp, ref): rouge-1, rouge-2 and summary-level rouge-l,
each f, p, r.  Usage:

    python3 tests/eval/rouge_ref.py tests/eval/rouge_pairs.tsv \
        > tests/eval/rouge_golden.tsv

Input: one pair a line, "hyp<TAB>ref", with \\t, \\n and \\\\ escapes.  The
script adds 300 generated pairs (fixed seed) from a small vocabulary.
Output: "hyp<TAB>ref<TAB>9 numbers" (r1 f p r, r2 f p r, rl f p r, %.17g),
or "hyp<TAB>ref<TAB>EMPTY" when the package would raise ValueError.
"""
import random
import sys


def segments(text):
    # text.split(".") keeps empty pieces; the package drops pieces of
    # length 0 *before* collapsing whitespace, so " " survives as "".
    return [" ".join(s.split()) for s in text.split(".") if len(s) > 0]


def words(segs):
    out = []
    for s in segs:
        out.extend(s.split(" "))
    return out


def ngram_set(ws, n):
    return {tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)}


def fpr(hyp_count, ref_count, overlap):
    p = 0.0 if hyp_count == 0 else overlap / hyp_count
    r = 0.0 if ref_count == 0 else overlap / ref_count
    f = 2.0 * ((p * r) / (p + r + 1e-8))
    return f, p, r


def rouge_n(hs, rs, n):
    h = ngram_set(words(hs), n)
    r = ngram_set(words(rs), n)
    return fpr(len(h), len(r), len(h & r))


def lcs_words(x, y):
    """Words of the LCS that a back-walk of the DP table picks: take a
    match diagonally; else up when T[i-1][j] > T[i][j-1], else left."""
    a, b = len(x), len(y)
    t = [[0] * (b + 1) for _ in range(a + 1)]
    for i in range(1, a + 1):
        for j in range(1, b + 1):
            if x[i - 1] == y[j - 1]:
                t[i][j] = t[i - 1][j - 1] + 1
            else:
                t[i][j] = max(t[i - 1][j], t[i][j - 1])
    picked = set()
    i, j = a, b
    while i > 0 and j > 0:
        if x[i - 1] == y[j - 1]:
            picked.add(x[i - 1])
            i, j = i - 1, j - 1
        elif t[i - 1][j] > t[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return picked


def rouge_l(hs, rs):
    m = len(set(words(rs)))
    n = len(set(words(hs)))
    union = set()
    for r in rs:
        rw = r.split(" ")
        for h in hs:
            union |= lcs_words(rw, h.split(" "))
    ll = len(union)
    r_ = ll / m
    p_ = ll / n
    return 2.0 * ((p_ * r_) / (p_ + r_ + 1e-8)), p_, r_


def score(hyp, ref):
    hs, rs = segments(hyp), segments(ref)
    if not hs or not rs:
        return None
    return rouge_n(hs, rs, 1) + rouge_n(hs, rs, 2) + rouge_l(hs, rs)


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
    pairs = []
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            h, r = line.split("\t")
            pairs.append((unescape(h), unescape(r)))
    pairs += generated(300, 20240314)
    for h, r in pairs:
        s = score(h, r)
        nums = "EMPTY" if s is None else " ".join("%.17g" % v for v in s)
        print("%s\t%s\t%s" % (escape(h), escape(r), nums))


if __name__ == "__main__":
    main()
