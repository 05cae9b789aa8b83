// Writes the use-lite golden files from the package's own JavaScript
// implementation (@energetic-ai/embeddings on @energetic-ai/core, TF.js).
// Run from the repo root after scripts/bootstrap:
//   node tests/use_lite/make_golden.js
// Outputs (tests/use_lite/): sentences.jsonl, tokens.jsonl (ids for every
// sentence) and vectors.f32 (512 float32 LE per sentence, first N_VEC).
'use strict';
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const NM = path.join(ROOT, 'third_party/js/node_modules');
const MODEL_DIR = path.join(ROOT, 'third_party/use-lite/dist');
const core = require(path.join(NM, '@energetic-ai/core'));
const emb = require(path.join(NM, '@energetic-ai/embeddings'));
const N_VEC = 200;

function expand(s) {
  return s.repeat ? s.text.repeat(s.repeat) : s.text;
}

async function load() {
  await core.ready();
  const model = await core.loadGraphModel(`file://${MODEL_DIR}/model.json`);
  const vocabulary = JSON.parse(
    fs.readFileSync(path.join(MODEL_DIR, 'vocab.json'), 'utf-8'));
  return new emb.EmbeddingsModel({model, vocabulary});
}

async function main() {
  const sentences = require('./sentences.js');
  const m = await load();
  const texts = sentences.map(expand);
  const out = __dirname;
  fs.writeFileSync(path.join(out, 'sentences.jsonl'),
    sentences.map((s) => JSON.stringify(s)).join('\n') + '\n');
  fs.writeFileSync(path.join(out, 'tokens.jsonl'),
    texts.map((t) => JSON.stringify(m.tokenizer.encode(t))).join('\n') +
    '\n');
  // The graph sizes its batch from the largest sentence index that has a
  // token, so a trailing empty text would lose its row: end with a sentinel.
  const batch = texts.slice(0, N_VEC).concat(['end.']);
  const vecs = await m.embed(batch);
  if (vecs.length !== batch.length)
    throw new Error(`got ${vecs.length} rows for ${batch.length} texts`);
  const f = new Float32Array(N_VEC * 512);
  for (let i = 0; i < N_VEC; i++)
    f.set(vecs[i], i * 512);
  fs.writeFileSync(path.join(out, 'vectors.f32'), Buffer.from(f.buffer));
  console.log(`backend ${core.getBackend()}: ${texts.length} token lists, ` +
    `${N_VEC} vectors`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
