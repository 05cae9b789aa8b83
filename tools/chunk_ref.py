#!/usr/bin/env python3
"""Reference for src/text/chunk.c: LangChain RecursiveCharacterTextSplitter
(separators ["\\n\\n", "\\n", " ", ""], keep_separator=True i.e. "start",
strip_whitespace=True, length = len()) written independently, twice: once
on strings as LangChain does it, once on offsets; the two must agree.

Usage:
  chunk_ref.py corpus JSONL [--first 40] [--every 200] [--over 3000]
               [--size 1000] [--overlap 200] [--cp]
  chunk_ref.py synthetic FILE.in [--cp]

Prints "id<TAB>chunk_index<TAB>byte_start<TAB>byte_end" per chunk (with
--cp, code-point start and end follow). A corpus document (JSONL line i,
0-based, field "text") is selected when i < first, i % every == 0 or
len(text) > over. Synthetic lines are "id<TAB>size<TAB>overlap<TAB>text",
text escaped with \\n \\t \\r \\s (space) \\\\ and \\xHH (one raw byte, so
invalid UTF-8 can be written); '#' lines and blank lines are skipped.
Bytes that are not UTF-8 decode with surrogateescape: one char per byte.

Regenerate the golden files from the repository root:
  python3 tools/chunk_ref.py corpus ../shared/data/medquad/corpus.jsonl \\
      --every 200 > tests/golden/chunk/medquad.expected
  python3 tools/chunk_ref.py corpus ../shared/data/pubmedqa/corpus.jsonl \\
      --every 50 > tests/golden/chunk/pubmedqa.expected
  python3 tools/chunk_ref.py synthetic tests/golden/chunk/synthetic.in \\
      > tests/golden/chunk/synthetic.expected
"""
import argparse
import json
import re
import sys

SEPARATORS = ["\n\n", "\n", " ", ""]


# ==== Version 1: strings, step by step as LangChain ====

def str_split_keep_start(text, sep):
    if sep == "":
        parts = list(text)
    else:
        raw = re.split("(" + re.escape(sep) + ")", text)
        parts = [raw[0]]
        for i in range(1, len(raw), 2):
            parts.append(raw[i] + raw[i + 1])
    return [p for p in parts if p != ""]


def str_merge(splits, size, overlap):
    docs = []
    cur = []
    total = 0
    for d in splits:
        n = len(d)
        if total + n > size:
            if cur:
                joined = "".join(cur).strip()
                if joined:
                    docs.append(joined)
                while total > overlap or (total + n > size and total > 0):
                    total -= len(cur[0])
                    cur = cur[1:]
        cur.append(d)
        total += n
    joined = "".join(cur).strip()
    if joined:
        docs.append(joined)
    return docs


def str_split(text, seps, size, overlap):
    sep = seps[-1]
    rest = []
    for i, s in enumerate(seps):
        if s == "":
            sep = s
            break
        if re.search(re.escape(s), text):
            sep = s
            rest = seps[i + 1:]
            break
    final = []
    good = []
    for piece in str_split_keep_start(text, sep):
        if len(piece) < size:
            good.append(piece)
            continue
        if good:
            final.extend(str_merge(good, size, overlap))
            good = []
        if rest:
            final.extend(str_split(piece, rest, size, overlap))
        else:
            final.append(piece)
    if good:
        final.extend(str_merge(good, size, overlap))
    return final


# ==== Version 2: code-point offsets ====

def off_pieces(text, s, e, sep):
    if sep == "":
        return [(i, i + 1) for i in range(s, e)]
    out = []
    start = s
    m = text.find(sep, s, e)
    while m != -1:
        if m > start:
            out.append((start, m))
        start = m
        m = text.find(sep, m + len(sep), e)
    if e > start:
        out.append((start, e))
    return out


def off_strip(text, s, e):
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return (s, e) if s < e else None


class OffChunker:
    def __init__(self, text, size, overlap):
        self.text = text
        self.size = size
        self.overlap = overlap
        self.out = []
        self.win = []
        self.total = 0

    def emit_window(self):
        if self.win:
            r = off_strip(self.text, self.win[0][0], self.win[-1][1])
            if r:
                self.out.append(r)

    def flush(self):
        self.emit_window()
        self.win = []
        self.total = 0

    def merge(self, p):
        n = p[1] - p[0]
        if self.total + n > self.size and self.win:
            self.emit_window()
            while self.total > self.overlap or (
                    self.total + n > self.size and self.total > 0):
                first = self.win.pop(0)
                self.total -= first[1] - first[0]
        self.win.append(p)
        self.total += n

    def split(self, s, e, lvl):
        while SEPARATORS[lvl] != "" and \
                self.text.find(SEPARATORS[lvl], s, e) == -1:
            lvl += 1
        for p in off_pieces(self.text, s, e, SEPARATORS[lvl]):
            if p[1] - p[0] < self.size:
                self.merge(p)
                continue
            self.flush()
            if SEPARATORS[lvl] == "":
                self.out.append(p)
            else:
                self.split(p[0], p[1], lvl + 1)
        self.flush()


def chunk(text, size, overlap):
    """Returns [(cp_start, cp_end, byte_start, byte_end)], checked against
    the string version."""
    c = OffChunker(text, size, overlap)
    c.split(0, len(text), 0)
    want = str_split(text, SEPARATORS, size, overlap)
    got = [text[a:b] for a, b in c.out]
    if got != want:
        raise SystemExit("chunk_ref: offset and string versions disagree")
    cum = [0]
    for ch in text:
        cum.append(cum[-1] + len(ch.encode("utf-8", "surrogateescape")))
    return [(a, b, cum[a], cum[b]) for a, b in c.out]


def print_chunks(doc_id, chunks, cp):
    for i, (a, b, ba, bb) in enumerate(chunks):
        extra = "\t%d\t%d" % (a, b) if cp else ""
        sys.stdout.write("%s\t%d\t%d\t%d%s\n" % (doc_id, i, ba, bb, extra))


def run_corpus(args):
    print("# generated by tools/chunk_ref.py corpus; offsets only")
    print("#select first=%d every=%d over=%d size=%d overlap=%d" %
          (args.first, args.every, args.over, args.size, args.overlap))
    with open(args.file, encoding="utf-8") as f:
        for i, line in enumerate(f):
            doc = json.loads(line)
            text = doc["text"]
            if i < args.first or i % args.every == 0 or \
                    len(text) > args.over:
                print_chunks(doc["id"], chunk(text, args.size, args.overlap),
                             args.cp)


ESCAPES = {ord("n"): b"\n", ord("t"): b"\t", ord("r"): b"\r",
           ord("s"): b" ", ord("\\"): b"\\"}


def unescape(raw):
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i] != ord("\\"):
            out.append(raw[i])
            i += 1
        elif raw[i + 1] == ord("x"):
            out.append(int(raw[i + 2:i + 4], 16))
            i += 4
        else:
            out += ESCAPES[raw[i + 1]]
            i += 2
    return bytes(out)


def run_synthetic(args):
    print("# generated by tools/chunk_ref.py synthetic; offsets only")
    with open(args.file, "rb") as f:
        for line in f:
            line = line.rstrip(b"\n")
            if not line or line.startswith(b"#"):
                continue
            doc_id, size, overlap, raw = line.split(b"\t", 3)
            text = unescape(raw).decode("utf-8", "surrogateescape")
            print_chunks(doc_id.decode(),
                         chunk(text, int(size), int(overlap)), args.cp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["corpus", "synthetic"])
    ap.add_argument("file")
    ap.add_argument("--first", type=int, default=40)
    ap.add_argument("--every", type=int, default=200)
    ap.add_argument("--over", type=int, default=3000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--overlap", type=int, default=200)
    ap.add_argument("--cp", action="store_true",
                    help="also print code-point offsets")
    args = ap.parse_args()
    if args.mode == "corpus":
        run_corpus(args)
    else:
        run_synthetic(args)


if __name__ == "__main__":
    main()
