#!/usr/bin/env node
// LanceDB peer for `make bench` (npm @lancedb/lancedb@0.31.0 with
// apache-arrow, installed by `scripts/bootstrap --bench` into
// third_party/lancedb; nothing of it is committed). Same data and queries
// as the other engines, one query at a time from this one JS thread;
// LanceDB itself runs each query on its own thread pool, so every
// latency is given by the wall clock and by the process CPU clock (all
// threads: process.cpuUsage), and "ms" is the one MEDTRUST_BENCH_CLOCK
// names (cpu by default, as the C engines report).
//   lancedb.js fts CHUNKS.tsv QUERIES.txt DBDIR [REPS]
//       BM25 build (rows added + FTS index) and top-10 latency;
//   lancedb.js quality CHUNKS.tsv QRELS.tsv DBDIR
//       per-document nDCG@10 / MRR@10 as bm25_fts5 quality counts them;
//   lancedb.js vec VECDIR N DIMS Q DBDIR
//       IVF_HNSW_SQ build (one partition: LanceDB's advice for HNSW) at
//       M 16, ef_construction 200, dot product (unit vectors), and an ef
//       sweep of latency and recall@10 against exact float;
//   lancedb.js hybrid CHUNKS.tsv QUERIES.txt VECDIR N DIMS DBDIR EF
//       FTS top-50 + vector top-50 fused by LanceDB's RRF reranker, top
//       10; chunk i carries vector i mod N, as hybrid_mt pairs them;
//   lancedb.js all CHUNKS.tsv QUERIES.txt VECDIR N DIMS DBDIR EF REPS OUT
//       the three on one table of N chunks (see all() below), written to
//       OUT-fts.json, OUT-vec.json and OUT-hybrid.json.
// CHUNKS.tsv: "chunk id<TAB>document ext_id<TAB>title<TAB>text" a line
// (bench/run exports it from the store with the query bm25_fts5 uses).
// Indexed text is the title, a space, then the chunk text, in one column:
// LanceDB ranks one FTS column at a time (FTS5 and medtrust weigh the
// two fields; this is the single-field form of the same BM25).
// Prints one JSON object.
'use strict';

// LanceDB logs a deprecation warning per query that selects columns
// without its score column; only errors are of interest here.
process.env.LANCEDB_LOG = process.env.LANCEDB_LOG || 'error';

const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');

// Lance sizes its CPU pool (spawn_cpu) at the cores less
// LANCE_IO_CORE_RESERVATION (2), at least 1: one thread on this two-core
// machine. Its FTS createIndex then deadlocks once the posting lists need
// a second output batch (about 100K rows here): the producer parks in a
// blocking send on the pool's only thread while the file writer's flush
// waits for a pool thread (lancedb/lancedb#3568, lance-format/lance#7423;
// every thread asleep, no I/O, as session 5 saw). Two threads is the
// workaround those threads give; where lance's own default is larger it
// is kept. LANCE_CPU_THREADS set by the caller wins.
const CPU_THREADS = process.env.LANCE_CPU_THREADS ||
    String(Math.max(2, os.cpus().length - 2));
process.env.LANCE_CPU_THREADS = CPU_THREADS;

const TP = path.join(__dirname, '..', 'third_party', 'lancedb',
    'node_modules');
const lancedb = require(path.join(TP, '@lancedb', 'lancedb'));
const arrow = require(path.join(TP, 'apache-arrow'));

const EFS = [16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024];
const BATCH = 100000; // rows a table.add (one Lance fragment each)
const CLOCK = process.env.MEDTRUST_BENCH_CLOCK === 'wall' ? 'wall' : 'cpu';

// ==== Clocks and statistics ====

function wallMs() {
    return Number(process.hrtime.bigint()) / 1e6;
}

function cpuMs() {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e3;
}

function stamp() {
    return { wall: wallMs(), cpu: cpuMs() };
}

function since(t0) {
    return { wall: wallMs() - t0.wall, cpu: cpuMs() - t0.cpu };
}

function median(v) {
    const s = [...v].sort((a, b) => a - b);
    return s.length ? s[Math.floor((s.length - 1) / 2)] : 0;
}

function pct(v, p) {
    const s = [...v].sort((a, b) => a - b);
    return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : 0;
}

function loadavg() {
    return fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3)
        .join(' ');
}

function peakRss() {
    const m = /VmHWM:\s+(\d+) kB/.exec(
        fs.readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
}

function duBytes(dir) {
    let total = 0;
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        total += e.isDirectory() ? duBytes(p) : fs.statSync(p).size;
    }
    return total;
}

function ndcg10(rel, nrel) {
    let dcg = 0;
    let ideal = 0;
    for (let i = 0; i < rel.length && i < 10; i++)
        if (rel[i])
            dcg += 1 / Math.log2(i + 2);
    for (let i = 0; i < nrel && i < 10; i++)
        ideal += 1 / Math.log2(i + 2);
    return ideal > 0 ? dcg / ideal : 0;
}

function mrr10(rel) {
    const i = rel.slice(0, 10).indexOf(true);
    return i < 0 ? 0 : 1 / (i + 1);
}

function recall10(found, gt, qi) {
    const truth = new Set(gt.subarray(qi * 10, qi * 10 + 10));
    let hit = 0;
    for (const id of found.slice(0, 10))
        if (truth.has(id))
            hit++;
    return hit / 10;
}

// ==== Input ====

function lines(file) {
    return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l);
}

// The words of a query, as bm25_fts5 and Xapian take them (runs of ASCII
// letters and digits, or non-ASCII), joined by spaces: LanceDB's default
// match query ORs the terms its tokenizer makes of them.
function words(q) {
    return (q.match(/[0-9A-Za-z\u0080-\uffff]+/g) || []).join(' ');
}

function fvecs(file, n, d) {
    const b = fs.readFileSync(file);
    if (b.length !== n * d * 4)
        throw new Error(`${file}: ${b.length} bytes, expected ${n * d * 4}`);
    return new Float32Array(b.buffer, b.byteOffset, n * d);
}

// Yields batches of {id, doc, text} rows from CHUNKS.tsv.
async function* chunkBatches(file) {
    const rl = readline.createInterface({
        input: fs.createReadStream(file), crlfDelay: Infinity,
    });
    let rows = [];
    let lineNo = 0;
    for await (const line of rl) {
        lineNo++;
        const f = line.split('\t');
        if (f.length !== 4)
            throw new Error(`${file}:${lineNo}: ${f.length} fields, not 4`);
        rows.push({ id: Number(f[0]), doc: f[1], text: f[2] + ' ' + f[3] });
        if (rows.length === BATCH) {
            yield rows;
            rows = [];
        }
    }
    if (rows.length)
        yield rows;
}

function vectorField(d) {
    return new arrow.Field('vector', new arrow.FixedSizeList(d,
        new arrow.Field('item', new arrow.Float32(), true)), true);
}

// An Arrow table of rows (and, with vecs, chunk i's vector i mod n).
function arrowRows(rows, vecs) {
    const cols = {
        id: arrow.vectorFromArray(rows.map((r) => r.id), new arrow.Int32()),
        text: arrow.vectorFromArray(rows.map((r) => r.text), new arrow.Utf8()),
    };
    if (vecs) {
        const { base, n, d } = vecs;
        const flat = new Float32Array(rows.length * d);
        rows.forEach((r, i) => flat.set(
            base.subarray((r.id % n) * d, (r.id % n) * d + d), i * d));
        const data = arrow.makeData({
            type: vectorField(d).type, length: rows.length, nullCount: 0,
            child: arrow.makeData({ type: new arrow.Float32(),
                length: flat.length, data: flat }),
        });
        cols.vector = arrow.makeVector(data);
    }
    return new arrow.Table(cols);
}

// ==== Tables ====

// Lance's index builds run on its own threads while this JS thread waits,
// so a deadlocked build (above) would wait for ever. This one fails
// instead when the whole process gained under 0.5 CPU-s in STALL_S
// seconds of the build: a slow build on a busy machine still gains more
// (4% of a core is 12 CPU-s in 300 s).
const STALL_S = Number(process.env.MEDTRUST_BENCH_LANCE_STALL_S || 300);

async function createIndex(table, column, config, what) {
    let last = cpuMs();
    let quiet = 0;
    const tick = 10;
    const timer = setInterval(() => {
        const now = cpuMs();
        quiet = now - last < 500 * tick / STALL_S ? quiet + tick : 0;
        last = now;
        if (quiet >= STALL_S) {
            process.stderr.write(`lancedb.js: ${what} createIndex made no ` +
                `progress for ${quiet} s (under 0.5 CPU-s, LANCE_CPU_THREADS=` +
                `${CPU_THREADS}): stalled, stopping\n`);
            process.exit(3);
        }
    }, tick * 1000);
    try {
        await table.createIndex(column, { config });
    } finally {
        clearInterval(timer);
    }
}

async function freshDb(dir) {
    fs.rmSync(dir, { recursive: true, force: true });
    return lancedb.connect(dir);
}

// Adds CHUNKS.tsv to a new table 't' and builds its FTS index on 'text'
// (English stemming and lower case, as the others' analysers; no
// positions: no engine here runs phrase queries). Returns the table, the
// chunk -> document map and the timings.
async function ftsTable(db, tsv, vecs) {
    const docOf = [];
    let table = null;
    let rows = 0;
    const t0 = stamp();
    for await (const batch of chunkBatches(tsv)) {
        for (const r of batch)
            docOf[r.id] = r.doc;
        const at = arrowRows(batch, vecs);
        if (table)
            await table.add(at);
        else
            table = await db.createTable('t', at);
        rows += batch.length;
    }
    const add = since(t0);
    const t1 = stamp();
    await createIndex(table, 'text', lancedb.Index.fts({
        withPosition: false, stem: true, lowercase: true, language: 'English',
        removeStopWords: false }), 'FTS');
    const index = since(t1);
    return { table, docOf, rows, add, index };
}

// Runs fn over every query, returning per-query wall and CPU ms.
async function timedPass(queries, fn) {
    const wall = [];
    let cpu = 0;
    for (let i = 0; i < queries.length; i++) {
        const t = stamp();
        await fn(queries[i], i);
        const s = since(t);
        wall.push(s.wall);
        cpu += s.cpu;
    }
    return { wall, cpuMean: cpu / queries.length };
}

function ftsQuery(table, q, k) {
    return table.query().fullTextSearch(words(q)).select(['id', '_score'])
        .limit(k).toArray();
}

function buildJson(t, rows, dir) {
    return { rows, add_s: t.add.wall / 1e3, add_cpu_s: t.add.cpu / 1e3,
        index_s: t.index.wall / 1e3, index_cpu_s: t.index.cpu / 1e3,
        build_s: (t.add.wall + t.index.wall) / 1e3,
        build_cpu_s: (t.add.cpu + t.index.cpu) / 1e3,
        disk_bytes: duBytes(dir) };
}

function writeAtomic(file, text) {
    fs.writeFileSync(file + '.part', text);
    fs.renameSync(file + '.part', file);
}

// ==== Modes ====

// The timed FTS passes over QUERIES on a built table (fts and all modes).
async function ftsRuns(built, qfile, reps) {
    const queries = lines(qfile).filter((q) => words(q));
    let hits = 0;
    await timedPass(queries.slice(0, 100), (q) => ftsQuery(built.table, q,
        10)); // warm-up
    const passes = [];
    for (let r = 0; r < reps; r++)
        passes.push(await timedPass(queries, async (q) => {
            hits += (await ftsQuery(built.table, q, 10)).length;
        }));
    const all = passes.flatMap((p) => p.wall);
    const wallMeans = passes.map((p) => p.wall.reduce((a, b) => a + b, 0) /
        p.wall.length);
    const cpuMean = median(passes.map((p) => p.cpuMean));
    const wallMean = median(wallMeans);
    return { queries: queries.length, reps, hits_per_query:
            hits / (reps * queries.length),
        ms_per_query: CLOCK === 'wall' ? wallMean : cpuMean,
        wall_ms_per_query: wallMean, cpu_ms_per_query: cpuMean,
        wall_p50_ms: pct(all, 0.5), wall_p95_ms: pct(all, 0.95) };
}

async function fts(tsv, qfile, dir, reps) {
    const db = await freshDb(dir);
    const built = await ftsTable(db, tsv, null);
    return { ...buildJson(built, built.rows, dir),
        chunks_per_s: built.rows / ((built.add.wall + built.index.wall) / 1e3),
        ...await ftsRuns(built, qfile, reps) };
}

async function quality(tsv, qrels, dir) {
    const db = await freshDb(dir);
    const built = await ftsTable(db, tsv, null);
    const qs = lines(qrels).map((l) => {
        const [query, rel = ''] = l.split('\t');
        return { query, rel: new Set(rel.split(' ').filter((x) => x)) };
    });
    let ndcg = 0;
    let mrr = 0;
    const t0 = stamp();
    for (const q of qs) {
        const docs = [];
        const rel = [];
        if (words(q.query))
            for (const h of await ftsQuery(built.table, q.query, 200)) {
                const d = built.docOf[Number(h.id)];
                if (docs.length < 10 && !docs.includes(d)) {
                    docs.push(d);
                    rel.push(q.rel.has(d));
                }
            }
        ndcg += ndcg10(rel, q.rel.size);
        mrr += mrr10(rel);
    }
    const t = since(t0);
    return { ...buildJson(built, built.rows, dir), queries: qs.length,
        ndcg10: ndcg / qs.length, mrr10: mrr / qs.length,
        ms_per_query: (CLOCK === 'wall' ? t.wall : t.cpu) / qs.length };
}

function loadVecs(vdir, n, d, nq) {
    return { base: fvecs(path.join(vdir, 'base.f32'), n, d),
        q: fvecs(path.join(vdir, 'query.f32'), nq, d),
        gt: new Uint32Array(fs.readFileSync(path.join(vdir, 'gt.u32'))
            .buffer.slice(0)), n, d, nq };
}

// The vectors are unit length, so L2 ranks as the inner product the others
// use. Not 'dot': with HNSW_SQ, 0.31.0 ranks by the dot product of the
// raw 8-bit codes (distances near -12 on unit vectors, recall@10 0.02 on
// a 3,000 x 16 set where l2 and cosine give 0.987). refine > 0 re-ranks
// refine * 10 candidates on the stored float vectors (refineFactor).
function vecQuery(table, v, ef, k, refine) {
    let q = table.query().nearestTo(v).distanceType('l2').nprobes(1).ef(ef);
    if (refine)
        q = q.refineFactor(refine);
    return q.select(['id', '_distance']).limit(k).toArray();
}

const HNSW_SQ = { distanceType: 'l2', numPartitions: 1, m: 16,
    efConstruction: 200 };

async function vecTable(db, v) {
    const t0 = stamp();
    let table = null;
    for (let s = 0; s < v.n; s += BATCH) {
        const rows = [];
        for (let i = s; i < Math.min(v.n, s + BATCH); i++)
            rows.push({ id: i, text: '' });
        const at = arrowRows(rows, v);
        if (table)
            await table.add(at);
        else
            table = await db.createTable('t', at);
    }
    const add = since(t0);
    const t1 = stamp();
    await createIndex(table, 'vector', lancedb.Index.hnswSq(HNSW_SQ),
        'IVF_HNSW_SQ');
    return { table, add, index: since(t1) };
}

// One ef sweep over every query (refine: see vecQuery). A row's vector
// is number id mod n (vec mode: id; all mode: chunk id, as hybrid pairs).
async function vecSweep(table, v, refine) {
    const qv = (i) => Array.from(v.q.subarray(i * v.d, i * v.d + v.d));
    const idx = Array.from({ length: v.nq }, (_, i) => i);
    const sweep = [];
    await timedPass(idx.slice(0, 100), (i) => vecQuery(table, qv(i), 128, 10,
        refine)); // warm-up
    // LanceDB refuses an ef below the candidates it fetches (refine * k)
    for (const ef of EFS.filter((e) => e >= 10 * Math.max(1, refine))) {
        let rec = 0;
        const p = await timedPass(idx, async (i) => {
            const r = await vecQuery(table, qv(i), ef, 10, refine);
            rec += recall10(r.map((h) => Number(h.id) % v.n), v.gt, i);
        });
        const wall = p.wall.reduce((a, b) => a + b, 0) / v.nq;
        sweep.push({ ef, ms: CLOCK === 'wall' ? wall : p.cpuMean,
            wall_ms: wall, cpu_ms: p.cpuMean, recall10: rec / v.nq });
    }
    return sweep;
}

async function vec(vdir, n, d, nq, dir) {
    const v = loadVecs(vdir, n, d, nq);
    const db = await freshDb(dir);
    const built = await vecTable(db, v);
    return { ...buildJson(built, n, dir), ...await vecRuns(built.table, v) };
}

async function vecRuns(table, v) {
    const sweep = await vecSweep(table, v, 0);
    const sweepRefine = await vecSweep(table, v, 4);
    return { index: 'IVF_HNSW_SQ', partitions: 1, M: 16,
        ef_construction: 200, dims: v.d, sweep, refine_factor: 4,
        sweep_refine: sweepRefine };
}

// The index directories of table 't' in dir.
function indexDirs(dir) {
    const ix = path.join(dir, 't.lance', '_indices');
    return fs.existsSync(ix) ? fs.readdirSync(ix).map((e) =>
        path.join(ix, e)) : [];
}

async function hybridTable(tsv, v, dir) {
    const db = await freshDb(dir);
    const built = await ftsTable(db, tsv, v);
    const before = new Set(indexDirs(dir));
    const t1 = stamp();
    await createIndex(built.table, 'vector', lancedb.Index.hnswSq(HNSW_SQ),
        'IVF_HNSW_SQ');
    built.vindex = since(t1);
    built.vindexBytes = indexDirs(dir).filter((e) => !before.has(e))
        .reduce((a, e) => a + duBytes(e), 0);
    return built;
}

async function hybridRuns(built, qfile, v, ef) {
    const d = v.d;
    const nq = v.nq;
    const rrf = await lancedb.rerankers.RRFReranker.create();
    const queries = lines(qfile).filter((q) => words(q)).slice(0, nq);
    const one = (q, i) => built.table.query().fullTextSearch(words(q))
        .nearestTo(Array.from(v.q.subarray((i % nq) * d, (i % nq) * d + d)))
        .distanceType('l2').nprobes(1).ef(ef).rerank(rrf)
        .select(['id']).limit(10).toArray();
    await timedPass(queries.slice(0, 100), one);
    const p = await timedPass(queries, one);
    const wall = p.wall.reduce((a, b) => a + b, 0) / queries.length;
    return { vector_index_s: built.vindex.wall / 1e3,
        vector_index_cpu_s: built.vindex.cpu / 1e3, ef, fusion: 'rrf',
        queries: queries.length,
        ms_per_query: CLOCK === 'wall' ? wall : p.cpuMean, wall_ms: wall,
        cpu_ms: p.cpuMean, wall_p50_ms: pct(p.wall, 0.5),
        wall_p95_ms: pct(p.wall, 0.95) };
}

async function hybrid(tsv, qfile, vdir, n, d, dir, ef) {
    const v = loadVecs(vdir, n, d, 1000);
    const built = await hybridTable(tsv, v, dir);
    return { ...buildJson(built, built.rows, dir),
        ...await hybridRuns(built, qfile, v, ef) };
}

// One table for the three: rows added once (text and vector), the FTS
// index, then the vector index, then the fts, vec and hybrid passes, each
// written as its own mode would print it to OUT-fts.json, OUT-vec.json
// and OUT-hybrid.json. At 1M rows each LanceDB index build takes minutes,
// and the separate modes would add the rows three times and build each
// index twice. The vector sweep needs every vector in the table exactly
// once (chunk id mod N covering 0..N-1: N chunks numbered 1..N), else
// its recall would be against vectors the table does not hold.
async function all(tsv, qfile, vdir, n, d, dir, ef, reps, out) {
    const v = loadVecs(vdir, n, d, 1000);
    const built = await hybridTable(tsv, v, dir);
    const seen = new Uint8Array(n);
    let distinct = 0;
    for (let id = 0; id < built.docOf.length; id++)
        if (built.docOf[id] !== undefined && !seen[id % n]++)
            distinct++;
    if (built.rows !== n || distinct !== n)
        throw new Error(`${tsv}: ${built.rows} chunks carry ${distinct} of ` +
            `the ${n} vectors; all needs each exactly once`);
    // bytes: the vector column as stored (n * d float32) and its index
    // count for vec, the rest of the table (ids, text, FTS index) for fts
    const disk = duBytes(dir);
    const vecBytes = n * d * 4 + built.vindexBytes;
    const add = { add_s: built.add.wall / 1e3, add_cpu_s: built.add.cpu / 1e3,
        rows: built.rows, one_table: true, table_bytes: disk };
    const ftsOut = { ...add, disk_bytes: disk - vecBytes,
        index_s: built.index.wall / 1e3,
        index_cpu_s: built.index.cpu / 1e3,
        build_s: (built.add.wall + built.index.wall) / 1e3,
        build_cpu_s: (built.add.cpu + built.index.cpu) / 1e3,
        chunks_per_s: built.rows / ((built.add.wall + built.index.wall) /
            1e3), ...await ftsRuns(built, qfile, reps) };
    const vecOut = { ...add, disk_bytes: vecBytes,
        vector_index_bytes: built.vindexBytes,
        index_s: built.vindex.wall / 1e3,
        index_cpu_s: built.vindex.cpu / 1e3,
        build_s: (built.add.wall + built.vindex.wall) / 1e3,
        build_cpu_s: (built.add.cpu + built.vindex.cpu) / 1e3,
        ...await vecRuns(built.table, v) };
    const hybOut = { ...add, disk_bytes: disk,
        build_s: (built.add.wall + built.index.wall + built.vindex.wall) / 1e3,
        build_cpu_s: (built.add.cpu + built.index.cpu + built.vindex.cpu) /
            1e3, ...await hybridRuns(built, qfile, v, ef) };
    return { fts: ftsOut, vec: vecOut, hybrid: hybOut, out };
}

async function main(a) {
    const usage = 'usage: lancedb.js fts CHUNKS.tsv QUERIES DBDIR [REPS] | ' +
        'quality CHUNKS.tsv QRELS DBDIR | vec VECDIR N DIMS Q DBDIR | ' +
        'hybrid CHUNKS.tsv QUERIES VECDIR N DIMS DBDIR EF | ' +
        'all CHUNKS.tsv QUERIES VECDIR N DIMS DBDIR EF REPS OUT';
    const head = { engine: 'lancedb', version: lancedb.version ||
        require(path.join(TP, '@lancedb', 'lancedb', 'package.json')).version,
    clock: CLOCK, load: loadavg(), lance_cpu_threads: Number(CPU_THREADS) };
    let out;
    if (a[0] === 'fts' && a.length >= 4)
        out = await fts(a[1], a[2], a[3], Number(a[4] || 3));
    else if (a[0] === 'quality' && a.length === 4)
        out = await quality(a[1], a[2], a[3]);
    else if (a[0] === 'vec' && a.length === 6)
        out = await vec(a[1], Number(a[2]), Number(a[3]), Number(a[4]), a[5]);
    else if (a[0] === 'hybrid' && a.length === 8)
        out = await hybrid(a[1], a[2], a[3], Number(a[4]), Number(a[5]), a[6],
            Number(a[7]));
    else if (a[0] === 'all' && a.length === 10) {
        const r = await all(a[1], a[2], a[3], Number(a[4]), Number(a[5]),
            a[6], Number(a[7]), Number(a[8]), a[9]);
        const tail = { peak_rss: peakRss(), load_end: loadavg() };
        for (const mode of ['fts', 'vec', 'hybrid'])
            writeAtomic(`${r.out}-${mode}.json`, JSON.stringify({ ...head,
                mode, ...r[mode], ...tail }) + '\n');
        return;
    } else {
        process.stderr.write(usage + '\n');
        process.exit(2);
    }
    process.stdout.write(JSON.stringify({ ...head, mode: a[0], ...out,
        peak_rss: peakRss(), load_end: loadavg() }) + '\n');
}

main(process.argv.slice(2)).catch((e) => {
    process.stderr.write(`lancedb.js: ${e.stack || e}\n`);
    process.exit(1);
});
