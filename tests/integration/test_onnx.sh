#!/usr/bin/env bash
# onnx:DIR models against transformers.js (issue 30): tiny ONNX export
# folders written by tests/fixtures/make_tiny_onnx.py (Debian python3-onnx),
# run by medtrust through ONNX Runtime's C API and by transformers.js
# (tests/fixtures/onnx_ref.mjs, offline) on the same folder.
#  - tokenizer.json in C, token id for token id (and type ids), for one
#    tokenizer of each kind (WordPiece, Unigram, byte-level BPE), on
#    tests/onnx/texts.json (accents, CJK, Arabic, emoji, long words,
#    controls, full-width forms), their pairs, and a text of 900+ tokens.
#    Left out there, as transformers.js differs from Hugging Face's
#    tokenizers (the Rust library, which medtrust follows): an empty second
#    text (transformers.js drops the pair), CJK outside the BMP (it does
#    not pad them), a capital sigma ending a word (its toLowerCase gives
#    final sigma), truncation (it cuts the ids after the special tokens,
#    dropping the last [SEP]) and a SentencePiece charsmap (it applies
#    NFKC instead). Those are compared with the Rust library itself
#    (third_party/venv-hf), every tokenizer, untruncated and truncated.
#  - medtrust embed = the feature-extraction pipeline (CLS from the
#    export's sentence-transformers config; mean by ?pooling=mean).
#  - --nli onnx: = softmax of the text-classification pipeline's tokenizer
#    call with text_pair and model, read through id2label; --reranker
#    onnx: = sigmoid of the single logit.
#  - errors name the file and the reason.
. "$(dirname "$0")/lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${MEDTRUST_BUILD:-$ROOT/build/test}
PROBE=$BUILD/fixtures/onnx_probe
export MEDTRUST_TJS=$ROOT/third_party/transformers-js/node_modules/@huggingface/transformers
PY=/usr/bin/python3
need "transformers.js, node and the probe" "$MEDTRUST_TJS/package.json" \
    "$(command -v node)" "$PROBE" "$ROOT/third_party/onnxruntime/lib/libonnxruntime.so.1"
if ! $PY -c 'import onnx, numpy' 2>/dev/null; then
    not_ok "python3-onnx and python3-numpy" "run make bootstrap"
    exit 1
fi

D=$TMP/models
if $PY "$ROOT/tests/fixtures/make_tiny_onnx.py" "$D" 2>"$TMP/gen.err"; then
    ok "tiny ONNX export folders written"
else
    not_ok "tiny ONNX export folders written" "$(tail -3 "$TMP/gen.err")"
    exit 1
fi
ref() { node "$ROOT/tests/fixtures/onnx_ref.mjs" "$@"; }

# ==== Tokenizers, id for id ====
$PY - "$ROOT/tests/onnx/texts.json" >"$TMP/items.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
items = [{"text": x} for x in t]
items += [{"text": t[i], "pair": t[(i + 1) % len(t)]} for i in range(len(t))
          if t[(i + 1) % len(t)]]
items.append({"text": " ".join(t[:3]) * 12})          # 900+ tokens
items.append({"text": t[8], "pair": " ".join(t[:4]) * 8})
print(json.dumps(items, ensure_ascii=False))
PY
# compare KIND JS C: ids equal, and type ids unless KIND is roberta (its
# post-processor gives none that the graph reads)
compare_tok() {
    $PY - "$@" <<'PY'
import json, sys
kind, js, c = sys.argv[1], json.load(open(sys.argv[2])), \
    [json.loads(l) for l in open(sys.argv[3])]
bad = [i for i, (a, b) in enumerate(zip(js, c))
       if a["ids"] != b["ids"] or
       (kind != "roberta" and a["type_ids"] != b["type_ids"])]
if len(js) != len(c) or bad or max(len(x["ids"]) for x in js) < 513:
    print("items", len(js), len(c), "differ at", bad[:5])
    for i in bad[:2]:
        print(" js", js[i]["ids"][:30]); print("  c", c[i]["ids"][:30])
    sys.exit(1)
PY
}
for m in bert deberta roberta; do
    name="tokenizer.json ($m: $(jq -r .model.type "$D/$m/tokenizer.json" 2>/dev/null || echo $m)) = transformers.js on $(grep -c . "$ROOT/tests/onnx/texts.json") texts, pairs, 900+ tokens"
    if ref tok "$D/$m" "$TMP/items.json" >"$TMP/js_$m.json" 2>"$TMP/err" &&
        "$PROBE" tok "$D/$m/tokenizer.json" "$TMP/items.json" >"$TMP/c_$m.jsonl" 2>>"$TMP/err" &&
        compare_tok "$m" "$TMP/js_$m.json" "$TMP/c_$m.jsonl" >"$TMP/cmp" 2>&1; then
        ok "$name"
    else
        not_ok "$name" "$(cat "$TMP/cmp" "$TMP/err" 2>/dev/null | tail -6)"
    fi
done

# ==== The same tokenizers against Hugging Face's tokenizers (Rust) ====
# The library itself (third_party/venv-hf), on the same items plus what
# transformers.js gets otherwise (a capital sigma ending a word, CJK past
# the BMP, an empty second text, compatibility characters), untruncated
# and truncated to 5, 7, 40 and 100 (longest_first); the Unigram tokenizer
# with a real SentencePiece nmt_nfkc charsmap (sentencepiece writes it).
HFPY=$ROOT/third_party/venv-hf/bin/python
need "Hugging Face tokenizers (make bootstrap)" "$HFPY"
cat >"$TMP/charsmap.py" <<'PY'
import base64, io, json, sys, sentencepiece as spm
texts = ["the patient presented with acute chest pain"] * 50 + \
    ["metformin is first line therapy for type 2 diabetes"] * 50
m = io.BytesIO()
spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=m,
                               vocab_size=30, minloglevel=2,
                               normalization_rule_name="nmt_nfkc")
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i
def fields(b):  # protobuf wire format: (field, bytes) of length-delimited
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        if k & 7 == 2:
            n, i = varint(b, i); yield k >> 3, b[i:i + n]; i += n
        elif k & 7 == 0:
            _, i = varint(b, i)
        else:
            i += 4 if k & 7 == 5 else 8
spec = [v for f, v in fields(m.getvalue()) if f == 3][0]      # normalizer_spec
cmap = [v for f, v in fields(spec) if f == 2][0]              # precompiled_charsmap
t = json.load(open(sys.argv[1]))
t["normalizer"]["normalizers"][1]["precompiled_charsmap"] = \
    base64.b64encode(cmap).decode()
json.dump(t, open(sys.argv[2], "w"), ensure_ascii=False)
PY
cat >"$TMP/rust_ref.py" <<'PY'
import json, sys
from tokenizers import Tokenizer
t = Tokenizer.from_file(sys.argv[1])
if int(sys.argv[3]):
    t.enable_truncation(max_length=int(sys.argv[3]), strategy="longest_first")
for it in json.load(open(sys.argv[2])):
    e = t.encode(it["text"], it.get("pair"))
    print(json.dumps({"ids": e.ids, "type_ids": e.type_ids}))
PY
$PY - "$ROOT/tests/onnx/texts.json" >"$TMP/items_hf.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])) + [
    "\u039f\u0394\u039f\u03a3 \u039f\u0394\u039f\u03a3.",
    "\U00020000\U00020001 ext-B \U0002a6a5",
    "\ufb01 \u210c \u2460 \u337b \uff76 \u00bc \u212b \u2126 \u212a"]
items = [{"text": x} for x in t]
items += [{"text": t[i], "pair": t[(i + 1) % len(t)]} for i in range(len(t))]
items.append({"text": " ".join(t[:3]) * 12, "pair": t[8] * 3})
print(json.dumps(items, ensure_ascii=False))
PY
if "$HFPY" "$TMP/charsmap.py" "$D/deberta/tokenizer.json" "$TMP/spm.json" 2>"$TMP/err"; then
    ok "a Unigram tokenizer.json with sentencepiece's nmt_nfkc charsmap written"
else
    not_ok "a Unigram tokenizer.json with sentencepiece's nmt_nfkc charsmap" "$(tail -3 "$TMP/err")"
fi
for f in "$D/bert/tokenizer.json" "$D/roberta/tokenizer.json" "$TMP/spm.json"; do
    bad=""
    for L in 0 5 7 40 100; do
        "$HFPY" "$TMP/rust_ref.py" "$f" "$TMP/items_hf.json" $L >"$TMP/r.jsonl" 2>"$TMP/err" &&
            "$PROBE" tok "$f" "$TMP/items_hf.json" $L >"$TMP/c.jsonl" 2>>"$TMP/err" &&
            cmp -s "$TMP/r.jsonl" <($PY -c 'import json,sys; [print(json.dumps(json.loads(l))) for l in open(sys.argv[1])]' "$TMP/c.jsonl") ||
            bad="$bad $L"
    done
    name="$(basename "$(dirname "$f")")/$(basename "$f") = Hugging Face tokenizers, untruncated and cut to 5, 7, 40, 100"
    [ -z "$bad" ] && ok "$name" || not_ok "$name" "differs at max_len$bad" "$(tail -3 "$TMP/err")"
done

# ==== Embeddings ====
# close FILE_JS FILE_MT TOL: JS rows vs `medtrust embed --json` rows
close_vecs() {
    $PY - "$@" <<'PY'
import json, sys
js = json.load(open(sys.argv[1]))
mt = [json.loads(l)["vector"] for l in open(sys.argv[2])]
tol = float(sys.argv[3])
worst = max(abs(x - y) for r, s in zip(js, mt) for x, y in zip(r, s))
if len(js) != len(mt) or any(len(r) != len(s) for r, s in zip(js, mt)) \
        or worst > tol:
    print("rows", len(js), len(mt), "worst", worst); sys.exit(1)
print("worst", worst)
PY
}
$PY - "$ROOT/tests/onnx/texts.json" >"$TMP/embed_in.jsonl" <<'PY'
import json, sys
for t in json.load(open(sys.argv[1]))[:-2]:
    if "\0" not in t:  # C strings from here on (the tokenizer test has NUL)
        print(json.dumps({"text": t}, ensure_ascii=False))
PY
for spec in "bert cls" "roberta?pooling=mean mean"; do
    set -- $spec
    dir=${1%%\?*}
    name="medtrust embed --embedder onnx:$1 = feature-extraction pooling $2"
    $PY -c 'import json,sys; print(json.dumps({"texts": [json.loads(l)["text"] for l in open(sys.argv[1])], "pooling": sys.argv[2]}))' \
        "$TMP/embed_in.jsonl" "$2" >"$TMP/embed_ref_in.json"
    if ref embed "$D/$dir" "$TMP/embed_ref_in.json" >"$TMP/js_emb.json" 2>"$TMP/err" &&
        "$MT" embed --json --embedder "onnx:$D/$1" --input "$TMP/embed_in.jsonl" \
            >"$TMP/mt_emb.jsonl" 2>>"$TMP/err" &&
        close_vecs "$TMP/js_emb.json" "$TMP/mt_emb.jsonl" 1e-5 >"$TMP/cmp" 2>&1; then
        ok "$name ($(cat "$TMP/cmp"))"
    else
        not_ok "$name" "$(cat "$TMP/cmp" "$TMP/err" 2>/dev/null | tail -5)"
    fi
done

# ==== NLI and reranker ====
$PY - "$ROOT/tests/onnx/texts.json" >"$TMP/pairs.json" <<'PY'
import json, sys
t = [x for x in json.load(open(sys.argv[1])) if "\0" not in x]
p = [{"a": "Metformin reduced mortality.",
      "b": "In a trial of 100 patients, metformin reduced mortality."},
     {"a": "Warfarin is safe with antibiotics.",
      "b": "Warfarin interacts with many antibiotics, raising the INR."}]
p += [{"a": t[i], "b": t[i + 1]} for i in range(0, 12)]
print(json.dumps(p, ensure_ascii=False))
PY
$PY -c 'import json,sys; print(json.dumps([{"a": x["b"], "b": x["a"]} for x in json.load(open(sys.argv[1]))], ensure_ascii=False))' \
    "$TMP/pairs.json" >"$TMP/pairs_rev.json"
# nli_check NAME SPEC JSIN: medtrust's probabilities (SUPPORT, CONTRADICT,
# NO_EVIDENCE) = the softmax of transformers.js's logits through id2label
nli_check() {
    local name=$1 spec=$2 jsin=$3 dir=${2#onnx:}
    dir=${dir%%\?*}
    if ref pairs "$dir" "$jsin" >"$TMP/js_nli.json" 2>"$TMP/err" &&
        "$PROBE" nli "$spec" "$TMP/pairs.json" >"$TMP/mt_nli.jsonl" 2>"$TMP/map" &&
        $PY - "$TMP/js_nli.json" "$TMP/mt_nli.jsonl" "$dir/config.json" >"$TMP/cmp" 2>&1 <<'PY'; then
import json, math, sys
js = json.load(open(sys.argv[1]))
mt = [json.loads(l) for l in open(sys.argv[2])]
lab = json.load(open(sys.argv[3]))["id2label"]
want = {"entailment": 0, "SUPPORT": 0, "contradiction": 1, "CONTRADICT": 1,
        "neutral": 2, "NOT ENOUGH INFO": 2}
worst = 0
for row, m in zip(js, mt):
    e = [math.exp(x - max(row)) for x in row]
    p = [x / sum(e) for x in e]
    ours = [0.0] * 3
    for i, x in enumerate(p):
        ours[want[lab[str(i)]]] = x
    worst = max(worst, max(abs(a - b) for a, b in zip(ours, m["probs"])))
    top = ["SUPPORT", "CONTRADICT", "NO_EVIDENCE"][ours.index(max(ours))]
    if top != m["label"]:
        print("label", top, m["label"]); sys.exit(1)
if len(js) != len(mt) or worst > 1e-5:
    print("rows", len(js), len(mt), "worst", worst); sys.exit(1)
print("worst", worst)
PY
        ok "$name ($(cat "$TMP/cmp"))"
    else
        not_ok "$name" "$(cat "$TMP/cmp" "$TMP/err" "$TMP/map" 2>/dev/null | tail -5)"
    fi
}
# MNLI labels, evidence first (the default): transformers.js gets
# (evidence, claim)
nli_check "--nli onnx: (MNLI id2label, evidence first) = transformers.js" \
    "onnx:$D/bert-nli" "$TMP/pairs_rev.json"
grep -q "output 0 (entailment) -> SUPPORT; output 2 (contradiction) -> CONTRADICT; output 1 (neutral) -> NO_EVIDENCE; pair evidence first" "$TMP/map" &&
    ok "the NLI mapping is said (id2label -> SUPPORT/CONTRADICT/NO_EVIDENCE)" ||
    not_ok "the NLI mapping is said" "$(cat "$TMP/map")"
nli_check "--nli onnx:?pair=claim-first (SciFact id2label, Unigram) = transformers.js" \
    "onnx:$D/deberta?pair=claim-first" "$TMP/pairs.json"

# Pairs batched (padded batches of 16, mtx_nli_classify_batch) = one pair
# a call, for both tokenizers and pair orders, over more than one batch.
$PY -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])) + json.load(open(sys.argv[2])), ensure_ascii=False))' \
    "$TMP/pairs.json" "$TMP/pairs_rev.json" >"$TMP/pairs_all.json"
for spec in "onnx:$D/bert-nli" "onnx:$D/deberta?pair=claim-first"; do
    name="--nli $spec: batched pairs = one pair a call"
    if "$PROBE" nli "$spec" "$TMP/pairs_all.json" >"$TMP/one.jsonl" 2>"$TMP/err" &&
        "$PROBE" nli-batch "$spec" "$TMP/pairs_all.json" >"$TMP/batch.jsonl" 2>>"$TMP/err" &&
        $PY - "$TMP/one.jsonl" "$TMP/batch.jsonl" >"$TMP/cmp" 2>&1 <<'PY'; then
import json, sys
one = [json.loads(l) for l in open(sys.argv[1])]
bat = [json.loads(l) for l in open(sys.argv[2])]
assert len(one) == len(bat) > 16, (len(one), len(bat))
worst = max(abs(a - b) for x, y in zip(one, bat)
            for a, b in zip(x["probs"], y["probs"]))
assert worst <= 1e-5 and all(x["label"] == y["label"] for x, y in zip(one, bat)), worst
print("%d pairs, worst %.1e" % (len(one), worst))
PY
        ok "$name ($(cat "$TMP/cmp"))"
    else
        not_ok "$name" "$(cat "$TMP/cmp" "$TMP/err" 2>/dev/null | tail -4)"
    fi
done

name="--reranker onnx: = sigmoid of transformers.js's logit"
if ref pairs "$D/bert-rank" "$TMP/pairs.json" >"$TMP/js_rank.json" 2>"$TMP/err" &&
    "$PROBE" rerank "onnx:$D/bert-rank" "$TMP/pairs.json" >"$TMP/mt_rank.jsonl" 2>>"$TMP/err" &&
    $PY - "$TMP/js_rank.json" "$TMP/mt_rank.jsonl" >"$TMP/cmp" 2>&1 <<'PY'; then
import json, math, sys
js = json.load(open(sys.argv[1]))
mt = [json.loads(l)["score"] for l in open(sys.argv[2])]
worst = max(abs(1 / (1 + math.exp(-r[0])) - s) for r, s in zip(js, mt))
if len(js) != len(mt) or worst > 1e-5:
    print("rows", len(js), len(mt), "worst", worst); sys.exit(1)
print("worst", worst)
PY
    ok "$name ($(cat "$TMP/cmp"))"
else
    not_ok "$name" "$(cat "$TMP/cmp" "$TMP/err" | tail -5)"
fi

# ==== medtrust models ====
name="medtrust models loads onnx: embedder, reranker and NLI"
if "$MT" models --embedder "onnx:$D/bert" --reranker "onnx:$D/bert-rank" \
    --nli "onnx:$D/bert-nli" >"$TMP/models.out" 2>&1 &&
    grep -q "^embedder .*ok: 16 dimensions" "$TMP/models.out" &&
    grep -q "^reranker .*ok" "$TMP/models.out" &&
    grep -q "^nli .*ok: .*entailment) -> SUPPORT" "$TMP/models.out"; then
    ok "$name"
else
    not_ok "$name" "$(cat "$TMP/models.out")"
fi

# ==== A model that does not load says which file and why ====
# fails NAME PATTERN CMD...: CMD exits non-zero with PATTERN on stderr
fails() {
    local name=$1 pat=$2
    shift 2
    if "$@" >"$TMP/out" 2>"$TMP/err"; then
        not_ok "$name" "exited 0"
    elif cat "$TMP/out" "$TMP/err" | grep -q -- "$pat"; then
        ok "$name"
    else
        not_ok "$name" "wanted /$pat/" "$(cat "$TMP/err")"
    fi
}
fails "a folder without a model is named" "onnx:$TMP/none: no model.onnx or onnx/model.onnx" \
    "$MT" embed --embedder "onnx:$TMP/none" x
cp -r "$D/bert" "$TMP/notok" && rm "$TMP/notok/tokenizer.json"
fails "a missing tokenizer.json is named" "$TMP/notok/tokenizer.json is missing" \
    "$MT" embed --embedder "onnx:$TMP/notok" x
cp -r "$D/bert" "$TMP/badonnx" && head -c 100 "$D/bert/onnx/model.onnx" >"$TMP/badonnx/onnx/model.onnx"
fails "a corrupt model.onnx is named with ONNX Runtime's reason" \
    "$TMP/badonnx/onnx/model.onnx: ONNX Runtime cannot load the model" \
    "$MT" embed --embedder "onnx:$TMP/badonnx" x
cp -r "$D/bert" "$TMP/badtok" && printf '{"model": {"type": "WordLevel"}}' >"$TMP/badtok/tokenizer.json"
fails "an unsupported tokenizer model is named" "badtok/tokenizer.json: model type 'WordLevel' is not supported" \
    "$MT" embed --embedder "onnx:$TMP/badtok" x
cp -r "$D/bert-rank" "$TMP/generic"
fails "an NLI model whose id2label names no NLI labels says how to map them" \
    "does not name entailment/SUPPORT.*?labels=A,B,C" \
    "$MT" models --nli "onnx:$TMP/generic"
fails "a missing ONNX Runtime says how to get one" \
    "cannot load ONNX Runtime (.*): run .make bootstrap.* MEDTRUST_ONNXRUNTIME" \
    env MEDTRUST_ONNXRUNTIME=$TMP/none.so "$MT" embed --embedder "onnx:$D/bert" x

# ==== An asymmetric retriever: --query-embedder (MedCPT's two encoders) ====
# The roberta folder plays the query encoder, bert (mean pooling) the
# article encoder: the index records both, and a search's queries take the
# query encoder (its scores equal those of naming it with --embedder, and
# differ from the article encoder's).
$PY - >"$TMP/docs.jsonl" <<'PY'
import json
docs = ["Metformin is first-line therapy for type 2 diabetes mellitus.",
        "Hypertension increases the risk of stroke and myocardial infarction.",
        "Warfarin interacts with many antibiotics, raising the INR.",
        "She was diagnosed with community-acquired pneumonia."]
for i, d in enumerate(docs):
    print(json.dumps({"id": f"d{i}", "title": f"doc {i}", "text": d}))
PY
Q="onnx:$D/roberta?pooling=mean"
A="onnx:$D/bert?pooling=mean"
name="index --query-embedder records both encoders in the MANIFEST"
if "$MT" index --db "$TMP/db" --input "$TMP/docs.jsonl" --embedder "$A" \
    --query-embedder "$Q" --no-progress >"$TMP/out" 2>"$TMP/err" &&
    grep -q "\"embedder\": \"$A\"" "$TMP/db/index/MANIFEST" &&
    grep -q "\"query_embedder\": \"$Q\"" "$TMP/db/index/MANIFEST"; then
    ok "$name"
else
    not_ok "$name" "$(cat "$TMP/err" "$TMP/db/index/MANIFEST" 2>/dev/null | tail -8)"
fi
scores() { "$MT" search --db "${DB:-$TMP/db}" --mode dense --group chunks --json -k 4 "$@" \
    "metformin for diabetes" | $PY -c 'import json,sys; print(" ".join("%s:%.5f" % (h["doc_id"], h["score"]) for h in map(json.loads, sys.stdin)))'; }
default=$(scores 2>&1)
query=$(scores --embedder "$Q" 2>&1)
article=$(scores --embedder "$A" 2>&1)
if [ -n "$default" ] && [ "$default" = "$query" ] && [ "$default" != "$article" ]; then
    ok "dense search embeds queries with the recorded query encoder"
else
    not_ok "dense search embeds queries with the recorded query encoder" \
        "default: $default" "query: $query" "article: $article"
fi
"$MT" index --db "$TMP/db" --input "$TMP/docs.jsonl" --source again \
    --no-progress >/dev/null 2>"$TMP/err"
grep -q "\"query_embedder\": \"$Q\"" "$TMP/db/index/MANIFEST" &&
    ok "a later index run keeps the query encoder" ||
    not_ok "a later index run keeps the query encoder" "$(cat "$TMP/err" "$TMP/db/index/MANIFEST" | tail -5)"
# Specs of any length round-trip through the MANIFEST (it once kept 127
# bytes of 'embedder', 255 of 'query_embedder'): a later run, naming the
# specs again or not, finds nothing changed and rebuilds no vectors.
L=$TMP/$(printf 'long-export-folder-%.0s' 1 2 3 4 5 6 7 8 9 10 11 12)
mkdir -p "$L" && cp -r "$D/bert" "$L/article" && cp -r "$D/roberta" "$L/query"
LA="onnx:$L/article?pooling=mean"
LQ="onnx:$L/query?pooling=mean"
name="long onnx: specs (${#LA}, ${#LQ} bytes) round-trip: no rebuild later"
"$MT" index --db "$TMP/dbl" --input "$TMP/docs.jsonl" --embedder "$LA" \
    --query-embedder "$LQ" --no-progress >"$TMP/l1" 2>"$TMP/err"
"$MT" index --db "$TMP/dbl" --input "$TMP/docs.jsonl" --no-progress \
    >"$TMP/l2" 2>>"$TMP/err"
"$MT" index --db "$TMP/dbl" --input "$TMP/docs.jsonl" --embedder "$LA" \
    --query-embedder "$LQ" --no-progress >"$TMP/l3" 2>>"$TMP/err"
if [ "${#LQ}" -gt 256 ] && grep -q "4 chunks added" "$TMP/l1" &&
    grep -q "0 chunks added," "$TMP/l2" && grep -q "0 chunks added," "$TMP/l3" &&
    grep -qF "\"embedder\": \"$LA\"" "$TMP/dbl/index/MANIFEST" &&
    grep -qF "\"query_embedder\": \"$LQ\"" "$TMP/dbl/index/MANIFEST" &&
    [ "$(DB=$TMP/dbl scores 2>&1)" = "$query" ]; then
    ok "$name"
else
    not_ok "$name" "$(cat "$TMP/l1" "$TMP/l2" "$TMP/l3" "$TMP/err" | tail -8)"
fi
fails "a query encoder of another width is refused" \
    "query-embedder onnx:.*bert24 gives 24 dimensions, the documents' embedder .* 16" \
    "$MT" index --db "$TMP/db2" --input "$TMP/docs.jsonl" --embedder "$A" \
    --query-embedder "onnx:$D/bert24" --no-progress
fails "a classifier is refused as an embedder" "bert-rank: the output is .*not token vectors" \
    "$MT" embed --embedder "onnx:$D/bert-rank" x

# ==== BERTScore from an ONNX export ====
# medtrust score --bertscore-model onnx:DIR = bert_score's math (greedy
# cosine matching, [CLS]/[SEP] rows matchable with weight 0, baseline
# rescaling) on transformers.js's token vectors of the same folder.
printf '%s\n' 'Text ID,Text,Error Flag,Error Type,Error Sentence ID,Corrected Sentence' \
    't-0,x,1,Diagnosis,2,The patient has gout.' \
    't-1,x,1,Management,1,Metformin is first-line therapy for type 2 diabetes.' \
    't-2,x,1,Diagnosis,3,She was diagnosed with community-acquired pneumonia.' \
    't-3,x,0,NA,-1,NA' >"$TMP/small.csv"
printf '%s\n' 't-0 1 2 "The patient has acute gout."' \
    't-1 1 1 "Insulin is first-line therapy for diabetes."' \
    't-2 1 3 "She has pneumonia, café résumé."' 't-3 0 -1 NA' >"$TMP/small.txt"
cat >"$TMP/bs_in.json" <<'JSON'
{"baseline": [0.3, 0.4, 0.35], "pairs": [
 {"cand": "The patient has acute gout.", "ref": "The patient has gout."},
 {"cand": "Insulin is first-line therapy for diabetes.",
  "ref": "Metformin is first-line therapy for type 2 diabetes."},
 {"cand": "She has pneumonia, café résumé.",
  "ref": "She was diagnosed with community-acquired pneumonia."}]}
JSON
printf 'LAYER,P,R,F\n0,0.1,0.1,0.1\n1,0.3,0.4,0.35\n' >"$TMP/base.csv"
name="score --bertscore-model onnx: (layer 1, baseline file) = bert_score's math on transformers.js's vectors"
if ref bertscore "$D/bert" "$TMP/bs_in.json" >"$TMP/js_bs.json" 2>"$TMP/err" &&
    "$MT" score --ref "$TMP/small.csv" --pred "$TMP/small.txt" --json \
        --bertscore-model "onnx:$D/bert" --bertscore-layer 1 \
        --bertscore-baseline "$TMP/base.csv" >"$TMP/mt_bs.json" 2>>"$TMP/err" &&
    $PY - "$TMP/js_bs.json" "$TMP/mt_bs.json" >"$TMP/cmp" 2>&1 <<'PY'; then
import json, sys
js = json.load(open(sys.argv[1]))
mt = json.load(open(sys.argv[2]))
clip = lambda x: min(1.0, max(0.0, x))
want = sum(clip(x["f"]) for x in js) / len(js)
got = mt["pairs_mean"]["bertscore"]
comp = (sum(clip(x["f"]) for x in js) + 1) / 4   # the NA note scores 1
if abs(want - got) > 1e-5 or abs(comp - mt["composite"]["bertscore"]) > 1e-5 \
        or mt["bertscore_baseline"] != [0.3, 0.4, 0.35]:
    print("want", want, comp, "got", got, mt["composite"]["bertscore"]); sys.exit(1)
print("F", ", ".join("%.4f" % x["f"] for x in js), "diff %.1e" % abs(want - got))
PY
    ok "$name ($(cat "$TMP/cmp"))"
else
    not_ok "$name" "$(cat "$TMP/cmp" "$TMP/err" 2>/dev/null | tail -5)"
fi
fails "--bertscore-layer past the export's last layer says how to export" \
    "--bertscore-layer 40: onnx:.*bert ends at layer 1" \
    "$MT" score --ref "$TMP/small.csv" --pred "$TMP/small.txt" \
    --bertscore-model "onnx:$D/bert" --bertscore-layer 40
# The official settings are recognised: an export whose config.json names
# microsoft/deberta-xlarge-mnli (as save_pretrained records it) and ends at
# layer 40, rescaled with a baseline, idf off.
cp -r "$D/bert" "$TMP/dxl40"
$PY - "$TMP/dxl40/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update({"_name_or_path": "microsoft/deberta-xlarge-mnli", "num_hidden_layers": 40})
json.dump(c, open(sys.argv[1], "w"))
PY
name="score says an export of the official model at layer 40 with its baseline is comparable with the published BERTScore"
if "$MT" score --ref "$TMP/small.csv" --pred "$TMP/small.txt" --json \
    --bertscore-model "onnx:$TMP/dxl40" --bertscore-layer 40 \
    --bertscore-baseline 0.3,0.4,0.35 >"$TMP/off.json" 2>"$TMP/err" &&
    grep -q '"bertscore_model":"microsoft/deberta-xlarge-mnli"' "$TMP/off.json" &&
    grep -q 'layer 40, rescaled with its baseline, idf off, computed as bert_score computes it: comparable' "$TMP/off.json" &&
    "$MT" score --ref "$TMP/small.csv" --pred "$TMP/small.txt" --json \
        --bertscore-model "onnx:$TMP/dxl40" >"$TMP/unoff.json" 2>>"$TMP/err" &&
    grep -q 'not with the official settings' "$TMP/unoff.json"; then
    ok "$name"
else
    not_ok "$name" "$(cat "$TMP/err" "$TMP/off.json" 2>/dev/null | tail -5)"
fi

# ==== The verifier's label mapping in an answer's trace ====
# `ask --nli onnx:` against the role-aware loopback stub over the four
# documents indexed above: the JSON names the id2label mapping, and the
# verdicts carry the mapped labels.
. "$(dirname "$0")/agent_lib.sh"
stub_start main
name="ask --nli onnx: records the id2label mapping in its JSON"
if MEDTRUST_LLM_TIMEOUT=20 "$MT" ask --db "$TMP/db" --llm "$SPEC" \
    --nli "onnx:$D/bert-nli" --search-mode bm25 --json \
    "Is metformin first-line therapy for diabetes?" >"$TMP/ask.json" 2>"$TMP/err" &&
    $PY - "$TMP/ask.json" >"$TMP/cmp" 2>&1 <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert "output 0 (entailment) -> SUPPORT" in r["verifier"], r.get("verifier")
vs = [v for c in r["claims"] for v in c["verdicts"] if v["label"] != "NO_REFERENCE"]
assert vs and all(v["label"] in ("SUPPORT", "CONTRADICT", "NO_EVIDENCE") for v in vs), vs
PY
    ok "$name"
else
    not_ok "$name" "$(cat "$TMP/cmp" "$TMP/err" 2>/dev/null | tail -4)" "$(head -c 400 "$TMP/ask.json")"
fi

# `verify --nli onnx:` records the same mapping: in --json (what a batch
# and /v1/verify write) and in the text output.
name="verify --nli onnx: records the id2label mapping in its JSON and text"
T="Metformin is first-line therapy for type 2 diabetes."
if MEDTRUST_LLM_TIMEOUT=20 "$MT" verify --db "$TMP/db" --llm "$SPEC" \
    --nli "onnx:$D/bert-nli" --json "$T" >"$TMP/verify.json" 2>"$TMP/err" &&
    MEDTRUST_LLM_TIMEOUT=20 "$MT" verify --db "$TMP/db" --llm "$SPEC" \
        --nli "onnx:$D/bert-nli" "$T" >"$TMP/verify.txt" 2>>"$TMP/err" &&
    grep -q "^Verifier: .*output 0 (entailment) -> SUPPORT" "$TMP/verify.txt" &&
    $PY - "$TMP/verify.json" >"$TMP/cmp" 2>&1 <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert "output 0 (entailment) -> SUPPORT" in r["verifier"], r.get("verifier")
PY
    ok "$name"
else
    not_ok "$name" "$(cat "$TMP/cmp" "$TMP/err" "$TMP/verify.txt" 2>/dev/null | tail -6)"
fi

# verify judges a claim's documents through an onnx: classifier as one
# padded batch: each document's label and score equal the classifier's
# one pair a call (onnx_probe nli) on the same pair (claim, "title text").
name="verify --nli onnx: batched judgements = one pair a call"
if MEDTRUST_LLM_TIMEOUT=20 "$MT" verify --db "$TMP/db" --llm "$SPEC" \
    --nli "onnx:$D/bert-nli" -k 4 --json "$T" >"$TMP/vk.json" 2>"$TMP/err" &&
    $PY - "$TMP/vk.json" "$TMP/docs.jsonl" "$T" >"$TMP/vpairs.json" 2>"$TMP/cmp" <<'PY' &&
import json, sys
r = json.load(open(sys.argv[1]))
docs = {d["id"]: d for d in map(json.loads, open(sys.argv[2]))}
ev = [e for s in r["sentences"] for c in s["claims"] for e in c["evidence"]]
assert len(ev) >= 2, ev
print(json.dumps([{"a": sys.argv[3], "b": docs[e["doc"]]["title"] + " " +
                   docs[e["doc"]]["text"], "label": e["label"],
                   "score": e["score"]} for e in ev]))
PY
    "$PROBE" nli "onnx:$D/bert-nli" "$TMP/vpairs.json" >"$TMP/vone.jsonl" 2>>"$TMP/err" &&
    $PY - "$TMP/vpairs.json" "$TMP/vone.jsonl" >>"$TMP/cmp" 2>&1 <<'PY'; then
import json, sys
want = json.load(open(sys.argv[1]))
got = [json.loads(l) for l in open(sys.argv[2])]
idx = {"SUPPORT": 0, "CONTRADICT": 1, "NO_EVIDENCE": 2}
for w, g in zip(want, got):
    assert w["label"] == g["label"], (w, g)
    assert abs(w["score"] - g["probs"][idx[g["label"]]]) <= 1e-5, (w, g)
print("%d documents" % len(got))
PY
    ok "$name ($(tail -1 "$TMP/cmp"))"
else
    not_ok "$name" "$(cat "$TMP/cmp" "$TMP/err" 2>/dev/null | tail -5)"
fi

# ask judges every claim's cited documents through an onnx: classifier as
# padded batches across claims: each verdict equals the classifier's one
# pair a call on the same pair (claim, "title text").
name="ask --nli onnx: batched verdicts across claims = one pair a call"
if $PY - "$TMP/ask.json" "$TMP/docs.jsonl" >"$TMP/apairs.json" 2>"$TMP/cmp" <<'PY' &&
import json, sys
r = json.load(open(sys.argv[1]))
docs = {d["id"]: d for d in map(json.loads, open(sys.argv[2]))}
out = [{"a": c["text"], "b": docs[v["doc_id"]]["title"] + " " +
        docs[v["doc_id"]]["text"], "label": v["label"], "score": v["score"]}
       for c in r["claims"] for v in c["verdicts"]
       if v["label"] in ("SUPPORT", "CONTRADICT", "NO_EVIDENCE")]
assert len(out) >= 2, out
print(json.dumps(out))
PY
    "$PROBE" nli "onnx:$D/bert-nli" "$TMP/apairs.json" >"$TMP/aone.jsonl" 2>>"$TMP/err" &&
    $PY - "$TMP/apairs.json" "$TMP/aone.jsonl" >>"$TMP/cmp" 2>&1 <<'PY'; then
import json, sys
want = json.load(open(sys.argv[1]))
got = [json.loads(l) for l in open(sys.argv[2])]
idx = {"SUPPORT": 0, "CONTRADICT": 1, "NO_EVIDENCE": 2}
assert len(want) == len(got)
for w, g in zip(want, got):
    assert w["label"] == g["label"], (w, g)
    assert abs(w["score"] - g["probs"][idx[g["label"]]]) <= 1e-5, (w, g)
print("%d pairs" % len(got))
PY
    ok "$name ($(tail -1 "$TMP/cmp"))"
else
    not_ok "$name" "$(cat "$TMP/cmp" "$TMP/err" 2>/dev/null | tail -5)"
fi
