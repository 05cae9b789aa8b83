// TF.js baseline for the use-lite benchmark: the package's own runtime
// (@energetic-ai/embeddings on @energetic-ai/core, TF.js WASM backend)
// embedding the same sentences, in batches of 32, best of 5 runs.
//   node bench/use_lite_tfjs.js SENTENCES.txt
'use strict';
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
const NM = path.join(ROOT, 'third_party/js/node_modules');
const MODEL_DIR = path.join(ROOT, 'third_party/use-lite/dist');
const core = require(path.join(NM, '@energetic-ai/core'));
const emb = require(path.join(NM, '@energetic-ai/embeddings'));
const BATCH = 32;

async function main() {
  const lines = fs.readFileSync(process.argv[2], 'utf-8').split('\n')
    .filter((l) => l.length > 0);
  await core.ready();
  const model = await core.loadGraphModel(`file://${MODEL_DIR}/model.json`);
  const vocabulary = JSON.parse(
    fs.readFileSync(path.join(MODEL_DIR, 'vocab.json'), 'utf-8'));
  const m = new emb.EmbeddingsModel({model, vocabulary});
  await m.embed(lines.slice(0, BATCH)); // warm-up
  let best = Infinity;
  for (let rep = 0; rep < 5; rep++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < lines.length; i += BATCH)
      await m.embed(lines.slice(i, i + BATCH));
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    best = Math.min(best, s);
  }
  const e = core.env();
  console.log(`TF.js (${core.getBackend()}, simd ` +
    `${e.getBool('WASM_HAS_SIMD_SUPPORT')}, threads ` +
    `${e.getBool('WASM_HAS_MULTITHREAD_SUPPORT')}): ${lines.length} ` +
    `sentences: ${best.toFixed(3)} s, ` +
    `${(lines.length / best).toFixed(1)} texts/s (best of 5)`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
