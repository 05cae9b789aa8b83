#!/usr/bin/env bash
# tools/chunk_ref.py (the Python reference chunker) still reproduces the
# chunker golden files in tests/golden/chunk/ that test_chunk compares with.
cd "$(dirname "$0")/../.." || exit 1
. tests/integration/lib.sh
G=tests/golden/chunk
REF=tools/chunk_ref.py

need "python3 for the reference chunker" "$(command -v python3)"

# same NAME EXPECTED CMD...: passes when CMD prints exactly EXPECTED.
same() {
    local name=$1 want=$2
    shift 2
    if "$@" >"$TMP/got" 2>"$TMP/err" && cmp -s "$TMP/got" "$want"; then
        ok "$name"
    else
        not_ok "$name" "command: $*" "$(diff "$TMP/got" "$want" | head -5)" \
            "$(tail -3 "$TMP/err")"
    fi
}

same "chunk_ref synthetic" "$G/synthetic.expected" \
    python3 "$REF" synthetic "$G/synthetic.in"
same "chunk_ref medquad" "$G/medquad.expected" \
    python3 "$REF" corpus "$DATA/medquad/corpus.jsonl" --every 200
same "chunk_ref pubmedqa" "$G/pubmedqa.expected" \
    python3 "$REF" corpus "$DATA/pubmedqa/corpus.jsonl" --every 50
same "chunk_ref pubmedqa size 300" "$G/pubmedqa_s300.expected" \
    python3 "$REF" corpus "$DATA/pubmedqa/corpus.jsonl" --every 50 \
    --size 300 --overlap 50
