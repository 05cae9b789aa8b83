#!/usr/bin/env bash
# The chunker golden files in tests/golden/chunk/ (that test_chunk compares
# src/text/chunk.c with) are what LangChain's real RecursiveCharacterTextSplitter
# gives: tools/chunk_ref.py imports it from ../shared/reference
# ($MEDTRUST_REFERENCE, else $MEDTRUST_DATA/../reference) and reproduces
# each file exactly. A missing reference is a failure, never a skip.
cd "$(dirname "$0")/../.." || exit 1
. tests/integration/lib.sh
G=tests/golden/chunk
REF=tools/chunk_ref.py
export MEDTRUST_REFERENCE=${MEDTRUST_REFERENCE:-$DATA/../reference}

need "python3 for the reference chunker" "$(command -v python3)"
need "LangChain's splitter (../shared/reference, see its README.md)" \
    "$MEDTRUST_REFERENCE/langchain_text_splitters/character.py"

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
