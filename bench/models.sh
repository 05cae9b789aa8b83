#!/usr/bin/env bash
# Model runtime benchmarks on random-weight GGUF models (speed does not
# depend on the weights): BERT-base embedder and cross-encoder, and a
# Qwen2-0.5B-shaped chat model through medtrust vs llama.cpp directly.
set -euo pipefail
BUILD=${1:-build/rel}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
V=third_party/llama.cpp/models
"$BUILD/fixtures/make_tiny_gguf" embed "$T/embed.gguf" "$V" base
"$BUILD/fixtures/make_tiny_gguf" rerank "$T/rerank.gguf" "$V" base
"$BUILD/fixtures/make_tiny_gguf" chat "$T/chat.gguf" "$V" qwen05
"$BUILD/bench/model_bench" embed "$T/embed.gguf"
"$BUILD/bench/model_bench" rerank "$T/rerank.gguf"
"$BUILD/bench/model_bench" gen "$T/chat.gguf"
