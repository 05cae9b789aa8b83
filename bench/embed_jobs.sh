#!/usr/bin/env bash
# Client vs server embedding throughput (issue 37): `medtrust index
# --embedder openai:URL#embed --embed-jobs N --embed-batch B` of the first
# 200 PubMedQA abstracts (1,187 chunks of 300 characters) against
# llama-server (one thread, 4 slots, --metrics) on make_tiny_gguf's tiny
# embedding model. Prints the client's chunks/s (the whole index run) and
# the server's own prompt tokens/s and busy seconds from /metrics.
# Usage: BUILD=build bash bench/embed_jobs.sh (MT=BINARY, FIX=make_tiny_gguf
# to take them from elsewhere)
set -u
R=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
MT=${MT:-$R/$BUILD/medtrust}
DATA=${MEDTRUST_DATA:-$R/../shared/data}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
"${FIX:-$R/$BUILD/fixtures/make_tiny_gguf}" embed embed.gguf \
    "$R/third_party/llama.cpp/models" tiny >/dev/null 2>&1 || exit 1
head -200 "$DATA/pubmedqa/corpus.jsonl" >c200.jsonl
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nice $R/third_party/llama-server/bin/llama-server -m embed.gguf --host 127.0.0.1 --port $port -t 1 --no-webui --embeddings -np 4 --metrics > srv2.log 2>&1 &
SRV=$!
for i in $(seq 120); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.5; done
metric() { curl -s http://127.0.0.1:$port/metrics | awk -v k="$1" '$1==k{print $2}'; }
for cfg in "1 64" "4 16" "4 64"; do
  set -- $cfg
  rm -rf M; t0=$(metric llamacpp:prompt_tokens_total); s0=$(metric llamacpp:prompt_seconds_total)
  a=$(date +%s.%N)
  MEDTRUST_EMBEDDER=none /usr/bin/time -f "%U %S" -o cpu nice $MT index --db M --input c200.jsonl --chunk-size 300 --chunk-overlap 0 --embedder "openai:http://127.0.0.1:$port#embed" --embed-jobs $1 --embed-batch $2 --no-progress >/dev/null 2>&1
  b=$(date +%s.%N)
  t1=$(metric llamacpp:prompt_tokens_total); s1=$(metric llamacpp:prompt_seconds_total)
  python3 -c "
w=$b-$a; tok=$t1-$t0; busy=$s1-$s0; cpu=sum(map(float, open('cpu').read().split()[-2:]))
print('jobs=$1 batch=$2: wall %.2fs, client %.0f chunks/s, client CPU %.2fs; server %d prompt tokens, %.0f tokens/s over the wall, prompt_seconds_total +%.2fs' % (w, 1187/w, cpu, tok, tok/w, busy))"
done
echo "load: $(cat /proc/loadavg)"
kill $SRV
