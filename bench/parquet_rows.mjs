// Writes N rows of MedRAG-shaped chunks twice, as the same rows: a Parquet
// file (hyparquet-writer, SNAPPY, dictionary where it pays, row groups of
// 100,000 rows, as Hugging Face shards hold) and MedRAG chunk JSONL
// ({"id","title","content","contents"}), for bench/import_parquet.sh.
//   node bench/parquet_rows.mjs OUT.parquet OUT.jsonl [N]
import fs from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const here = path.dirname(new URL(import.meta.url).pathname)
const mods = process.env.MEDTRUST_PARQUET_JS ||
  path.join(here, '../third_party/parquet-js/node_modules')
const hw = await import(pathToFileURL(
  path.join(mods, 'hyparquet-writer/src/index.js')).href)

const [pq, jl] = process.argv.slice(2, 4)
const n = Number(process.argv[4] || 1000000)
const words = ('patient patients dose mg daily treatment therapy trial ' +
  'randomized blood pressure hypertension diabetes insulin renal hepatic ' +
  'cardiac myocardial infarction aspirin statin guideline recommend ' +
  'adults children infection antibiotic sepsis fever cough pain chronic ' +
  'acute clinical diagnosis management risk outcome mortality').split(' ')
let seed = 42
const rnd = (k) => { // xorshift32
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) % k
}
const text = (k) => Array.from({ length: k }, () => words[rnd(words.length)])
  .join(' ') + '.'

const id = [], title = [], content = []
const out = fs.openSync(jl, 'w')
let buf = ''
for (let i = 0; i < n; i++) {
  const t = `Topic ${rnd(5000)}`
  const c = text(60 + rnd(80)) // 60-140 words: MedRAG's chunks are ~100
  id.push(`chunk_${i}`)
  title.push(t)
  content.push(c)
  buf += JSON.stringify({ id: `chunk_${i}`, title: t, content: c,
    contents: `${t}. ${c}` }) + '\n'
  if (buf.length > 1 << 22) {
    fs.writeSync(out, buf)
    buf = ''
  }
}
fs.writeSync(out, buf)
fs.closeSync(out)
fs.writeFileSync(pq, new Uint8Array(hw.parquetWriteBuffer({
  rowGroupSize: 100000,
  columnData: [
    { name: 'id', data: id, type: 'STRING', nullable: false },
    { name: 'title', data: title, type: 'STRING' },
    { name: 'content', data: content, type: 'STRING' },
  ],
})))
