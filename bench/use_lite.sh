#!/usr/bin/env bash
# use-lite throughput, side by side with the package's TF.js runtime, on
# 1,000 MedQuAD sentences (1 and 2 threads), then the time to embed every
# MedQuAD chunk. Usage: bash bench/use_lite.sh [BUILD] (BUILD: an
# unsanitised build tree with use-lite.mtw; `make bench-use-lite` runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DATA=${MEDTRUST_DATA:-../shared/data}
CORPUS="$DATA/medquad/corpus.jsonl"
SENT="$BUILD/bench/use_lite_sentences.txt"
BIN="$BUILD/bench/use_lite_bench"

echo "# $(date -u +%F) $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
"$BIN" --sentences 1000 --dump "$SENT" --threads 1 "$CORPUS"
"$BIN" --sentences 1000 --threads 2 "$CORPUS"
node bench/use_lite_tfjs.js "$SENT"
"$BIN" --chunks --threads 2 "$CORPUS"
