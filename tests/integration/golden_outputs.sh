#!/usr/bin/env bash
# golden_outputs.sh BIN AGENT_STUB OUT: runs `medtrust` BIN on a small
# made-up fixture through the deterministic agent stub and keeps every output of
# check, mediqa, sweep and the API under OUT (NAME.out, NAME.err, NAME.rc
# per command; the files the runs wrote under OUT/files). Used by
# test_outputs_golden.sh with the binary under test, and by
# tests/golden/outputs/README.md's recipe with the binary of d33313a (the
# last commit before issue 33's restructuring) to write the goldens.
# Everything runs one note at a time: the stub's MedEval scores cycle in
# call order. Paths in outputs are relative to the work folder, which is
# OUT/../work.
set -u
BIN=$(realpath "$1")
STUB=$(realpath "$2")
OUT=$(realpath -m "$3")
W=$(dirname "$OUT")/work
rm -rf "$W" "$OUT"
mkdir -p "$W" "$OUT/files"
cd "$W" || exit 1
export MEDTRUST_EMBEDDER=none MEDTRUST_LLM_TIMEOUT=20
unset MEDTRUST_LLM MEDTRUST_NLI MEDTRUST_LLM_REACT MEDTRUST_LLM_EVAL \
    MEDTRUST_LLM_REFLECT MEDTRUST_LLM_PARSER MEDTRUST_LLM_GUARD \
    MEDTRUST_LLM_SINGLE MEDTRUST_LLM_QA MEDTRUST_LLM_JUDGE
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done' EXIT

# stub NAME ARGS...: starts an agent stub; SPEC is its openai: spec.
stub() {
    local name=$1 port
    shift
    "$STUB" --log "$W/stub-$name.log" "$@" >"$W/stub-$name.port" &
    PIDS+=($!)
    for _ in $(seq 200); do
        port=$(head -1 "$W/stub-$name.port" 2>/dev/null)
        [ -n "$port" ] && break
        sleep 0.05
    done
    SPEC="openai:http://127.0.0.1:$port#stub"
}
# r NAME CMD...: runs CMD; its stdout, stderr and status in OUT/NAME.*
r() {
    local name=$1
    shift
    "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    echo $? >"$OUT/$name.rc"
}
keep() { # keep FILE...: copies files the runs wrote into OUT/files
    local f
    for f in "$@"; do
        mkdir -p "$OUT/files/$(dirname "$f")"
        cp "$f" "$OUT/files/$f"
    done
}

# ---- the fixture, made up here (the goldens hold no data set's text):
# a note, a Chinese note, six MEDEC-format notes (labeled, the error in
# some last sentences) and a 12-document corpus; a store of one chunk a
# document (the server of d33313a showed a document's first chunk for
# each of its hits, where the check had seen another: the hits now carry
# their own) with the user alice ----
printf 'A 62-year-old man has crushing chest pain.\nECG shows ST elevation in II, III and aVF.\nHe is given aspirin and sent home.\n' >note.txt
printf '患者男，62岁，胸痛两小时。\n心电图示下壁导联ST段抬高。\n给予阿司匹林后让其回家。\n' >cn.txt
python3 <<'PY'
import csv, json
notes = [
    ("g-0", ["A 30-year-old woman has dysuria and frequency.",
             "Urinalysis shows nitrites and leukocyte esterase.",
             "She is treated with nitrofurantoin for cystitis."], -1, None),
    ("g-1", ["A 70-year-old man has sudden weakness of the right arm.",
             "CT of the head shows no bleeding.",
             "He is given heparin and sent home without imaging of the neck."],
     2, "He is given alteplase within the time window."),
    ("g-2", ["A 5-year-old boy has a barking cough and stridor at night.",
             "He has a low fever.",
             "The diagnosis is epiglottitis caused by a virus."],
     2, "The diagnosis is croup caused by parainfluenza virus."),
    ("g-3", ["A 45-year-old woman has fatigue and weight gain.",
             "TSH is high and free T4 is low.",
             "She is started on levothyroxine."], -1, None),
    ("g-4", ["A 25-year-old man has fever and a painful swollen knee.",
             "Synovial fluid shows gram-negative diplococci.",
             "The causal organism is Staphylococcus aureus."],
     2, "The causal organism is Neisseria gonorrhoeae."),
    ("g-5", ["A 60-year-old smoker has hemoptysis and weight loss.",
             "Chest X-ray shows a central mass.",
             "Biopsy confirms small cell carcinoma, and he is sent home without treatment."],
     2, "Biopsy confirms small cell carcinoma, and chemotherapy is started."),
]
head = ["Text ID", "Text", "Sentences", "Error Flag", "Error Type",
        "Error Sentence ID", "Error Sentence", "Corrected Sentence",
        "Corrected Text"]
for n, name in ((6, "s6.csv"), (3, "s3.csv")):
    w = csv.writer(open(name, "w", encoding="utf-8", newline=""))
    w.writerow(head)
    for tid, sents, err, fix in notes[:n]:
        text = " ".join(sents)
        lines = "\n".join("%d %s" % (i, x) for i, x in enumerate(sents))
        if err < 0:
            w.writerow([tid, text, lines, 0, "NA", -1, "NA", "NA", "NA"])
        else:
            w.writerow([tid, text, lines, 1, "diagnosis", err, sents[err],
                        fix, text.replace(sents[err], fix)])
docs = [
    ("d1", "Myocardial infarction", "ST elevation in the inferior leads means an acute myocardial infarction; aspirin is given and the patient is sent for primary PCI, never sent home."),
    ("d2", "Stroke thrombolysis", "Alteplase is given within 4.5 hours of an ischemic stroke once CT shows no bleeding; heparin is not a treatment of acute stroke."),
    ("d3", "Croup", "Croup is a viral infection, mostly parainfluenza virus, with a barking cough and stridor at night; epiglottitis is bacterial."),
    ("d4", "Cystitis", "Nitrofurantoin treats uncomplicated cystitis; urinalysis shows nitrites and leukocyte esterase."),
    ("d5", "Hypothyroidism", "A high TSH and a low free T4 mean primary hypothyroidism, treated with levothyroxine."),
    ("d6", "Septic arthritis", "Gram-negative diplococci in synovial fluid of a young adult mean Neisseria gonorrhoeae; Staphylococcus aureus is a gram-positive coccus."),
    ("d7", "Small cell carcinoma", "Small cell carcinoma of the lung is treated with chemotherapy; a central mass and hemoptysis in a smoker suggest it."),
    ("d8", None, "Patients sent home early after chest pain without an ECG are at risk of a missed infarction."),
    ("d9", "Aspirin", "Aspirin inhibits platelet aggregation and is given to every patient with an acute coronary syndrome."),
    ("d10", "Influenza", "Influenza spreads through droplets; fever, cough and body aches last about a week."),
    ("d11", "Fracture", "A fracture of the femur needs surgery and months of rehabilitation before walking again."),
    ("d12", None, "Home discharge after a stroke depends on the deficit; the patient is sent home when he can walk."),
]
with open("c.jsonl", "w", encoding="utf-8") as f:
    for i, t, x in docs:
        d = {"id": i, "text": x}
        if t:
            d["title"] = t
        f.write(json.dumps(d) + "\n")
PY
"$BIN" index --db db --input c.jsonl --source golden --chunk-size 100000 \
    --no-progress >/dev/null 2>&1
echo 'alice-password' | "$BIN" user add --db db alice >/dev/null 2>&1

# ---- check ----
stub main
for s in guards single; do
    r "check-$s.json" "$BIN" check --llm "$SPEC" --strategy "$s" --json note.txt
done
r check-react-reflex.json "$BIN" check --llm "$SPEC" --db db --json note.txt
r check-react-reflex.txt "$BIN" check --llm "$SPEC" --db db note.txt
r check-cn-guards.txt "$BIN" check --llm "$SPEC" --strategy guards cn.txt
r check-no-corpus "$BIN" check --llm "$SPEC" note.txt
stub rounds --eval-finals 4,4,4,4,2,5,5,5,5,4
r check-rounds.json "$BIN" check --llm "$SPEC" --db db --json note.txt

# ---- mediqa ----
stub mq
r mediqa-guards "$BIN" mediqa --llm "$SPEC" --data s6.csv --strategy guards \
    --out mq-guards.txt --trace mq-guards.jsonl --jobs 1 --no-progress --json
stub mqrr --eval-finals 4,4,4,4,2,5,5,5,5,4
r mediqa-rr "$BIN" mediqa --llm "$SPEC" --data s3.csv --strategy react-reflex \
    --db db --out mq-rr.txt --trace mq-rr.jsonl --jobs 1 --no-progress
keep mq-guards.txt mq-guards.txt.journal mq-guards.jsonl mq-rr.txt \
    mq-rr.txt.journal mq-rr.jsonl

# ---- sweep and its threshold replay ----
stub sw --eval-finals 4,4,4,4,2,5,5,5,5,4
r sweep "$BIN" sweep --data s6.csv --sample 3 --seed 7 --runs 1 \
    --grid retrieve_k=5,10 --rerank-k 5 --strategy react-reflex --db db \
    --llm "$SPEC" --jobs 1 --no-progress --out sw
r sweep-replay "$BIN" sweep --replay sw --out swr --grid eval_avg=3.0,3.8 \
    --no-progress
# (a replayed cell's trace.jsonl is the recorded run's, copied)
keep $(find sw swr -type f ! -name '*.lock' ! -path 'swr/*/trace.jsonl' | sort)

# ---- the API: POST /v1/check, /v1/batch, /v1/ask ----
stub api
"$BIN" serve --db db --listen 127.0.0.1:0 --llm "$SPEC" --llm-jobs 1 \
    --rate-limit 0 >serve.out 2>serve.err &
PIDS+=($!)
for _ in $(seq 400); do grep -q listening serve.out 2>/dev/null && break; sleep 0.05; done
U=$(sed -n 's/^listening on http:\/\/[a-z0-9.]*:\([0-9]*\)$/http:\/\/127.0.0.1:\1/p' serve.out)
curl -s -c jar "$U/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"alice","password":"alice-password"}' >login.json
CSRF=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' login.json)
A=(-b jar -H "X-CSRF-Token: $CSRF")
# api NAME PATH BODY: POSTs BODY (the reply and its status in NAME.post),
# follows the run's events to the end (NAME.sse) and reads it (NAME.run).
api() {
    local run
    curl -s -w '\n%{http_code}\n' "${A[@]}" "$U$2" -d "$3" >"$OUT/api-$1.post"
    run=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().split("\n")[0]).get("run_id", 0))' "$OUT/api-$1.post")
    [ "$run" = 0 ] && return
    curl -sN "${A[@]}" "$U/v1/runs/$run/events" >"$OUT/api-$1.sse"
    curl -s "${A[@]}" "$U/v1/runs/$run" >"$OUT/api-$1.run"
}
body() { # body KEY FILE [JSON]: JSON with KEY set to FILE's text
    python3 -c 'import json,sys; o=json.loads(sys.argv[3] if len(sys.argv) > 3 else "{}"); o[sys.argv[1]]=open(sys.argv[2], encoding="utf-8").read(); print(json.dumps(o))' "$@"
}
api check-react-reflex /v1/check "$(body note note.txt '{"strategy":"react-reflex"}')"
api check-guards /v1/check "$(body note note.txt '{"strategy":"guards"}')"
api check-bad /v1/check '{"note":"x.","max_rounds":99}'
api batch /v1/batch "$(body data s6.csv '{"strategy":"single","name":"golden"}')"
printf 'How is croup treated and what virus causes it?' >q.txt
api ask /v1/ask "$(body question q.txt '{"k":5}')"
kill "${PIDS[@]}" 2>/dev/null
wait 2>/dev/null
PIDS=()
for f in stub-*.log; do sort "$f" >"$OUT/files/$f"; done
# the work folder's path (a temporary one) reads WORK in every output
grep -rlF "$W" "$OUT" | while read -r f; do
    python3 - "$f" "$W" <<'PY'
import sys
p, w = sys.argv[1], sys.argv[2]
t = open(p, "rb").read().replace(w.encode(), b"WORK")
open(p, "wb").write(t)
PY
done
