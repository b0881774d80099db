/**
 * Retrieval quality of the embedded embedding and rerank engines (numbers, not pass/fail).
 *
 *   node --conditions=source --import ./tools/ts-register.js bench/retrieval.ts [--weights 0.4,0.6]
 *
 * Corpus: this repository's own documentation (README.md, docs/, the apps' and libs' READMEs,
 * bench/README.md), one document per `##`/`###` section (heading + text; text before the first such
 * heading is the file's `(intro)`). Questions: bench/retrieval/questions.ts, written as users would ask
 * them, each with the section that answers it; some are phrased without the section's words.
 * Each engine ranks every section for every question:
 *   lexical-hash   cosine of the hashed lexical vectors (the previous embedding default: the baseline)
 *   glove-sif      cosine of the GloVe-SIF sentence vectors (the embedding default)
 *   bm25           Okapi BM25 over the sections (the previous rerank default)
 *   hybrid         BM25 + GloVe-SIF mixed with the hybrid engine's weights (the rerank default)
 * and prints MRR (mean reciprocal rank of the answering section) and recall@5 (share of questions whose
 * section is in the top 5), over all questions and over the paraphrased ones; then the similarity check
 * (word and sentence pairs that should be closer than a control pair) for the two embedding engines.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  bm25Factory,
  catalogEntry,
  cosine,
  type EmbeddingEngine,
  engineContext,
  gloveSifFactory,
  hybridFactory,
  lexicalHashFactory,
  neverAborted,
  type RerankEngine,
} from '@infer/embedding-service/public';
import { QUESTIONS, SIMILARITY } from './retrieval/questions.js';

const { values: args } = parseArgs({ options: { weights: { type: 'string' }, glove: { type: 'string' } } });
const root = join(import.meta.dirname, '..');

interface Section {
  id: string;
  text: string;
}

function docFiles(): string[] {
  const md = (dir: string) =>
    readdirSync(join(root, dir))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => join(dir, f));
  const readmes = (dir: string) =>
    readdirSync(join(root, dir))
      .sort()
      .map((d) => join(dir, d, 'README.md'))
      .filter((f) => {
        try {
          readFileSync(join(root, f));
          return true;
        } catch {
          return false;
        }
      });
  return [
    'README.md',
    ...md('docs'),
    ...md('docs/adr'),
    ...readmes('apps'),
    ...readmes('libs'),
    'bench/README.md',
  ];
}

export function sections(): Section[] {
  const out: Section[] = [];
  for (const file of docFiles()) {
    const lines = readFileSync(join(root, file), 'utf8').split('\n');
    let heading = '(intro)';
    let body: string[] = [];
    let fence = false;
    const flush = () => {
      const text = body.join('\n').trim();
      if (text)
        out.push({ id: `${file}#${heading}`, text: `${heading === '(intro)' ? '' : heading}\n${text}` });
      body = [];
    };
    for (const line of lines) {
      if (line.startsWith('```')) fence = !fence;
      const m = fence ? null : /^#{2,3} (.*)$/.exec(line);
      if (m) {
        flush();
        heading = (m[1] as string).trim();
      } else body.push(line);
    }
    flush();
  }
  return out;
}

interface Scores {
  mrr: number;
  r5: number;
  pmrr: number;
  pr5: number;
}

function evaluate(rankOf: (qi: number) => number): Scores {
  let mrr = 0;
  let r5 = 0;
  let pmrr = 0;
  let pr5 = 0;
  let np = 0;
  QUESTIONS.forEach((q, i) => {
    const r = rankOf(i);
    mrr += 1 / r;
    if (r <= 5) r5++;
    if (q.paraphrase) {
      np++;
      pmrr += 1 / r;
      if (r <= 5) pr5++;
    }
  });
  const n = QUESTIONS.length;
  return { mrr: mrr / n, r5: r5 / n, pmrr: pmrr / np, pr5: pr5 / np };
}

/** 1-based rank of `target` in `scores` (ties count against it). */
function rankIn(scores: readonly number[], target: number): number {
  const t = scores[target] as number;
  let r = 1;
  scores.forEach((s, i) => {
    if (i !== target && s >= t) r++;
  });
  return r;
}

const secs = sections();
const index = new Map(secs.map((s, i) => [s.id, i]));
const missing = QUESTIONS.filter((q) => !index.has(q.answer)).map((q) => q.answer);
if (missing.length) {
  console.error(`sections not found in the docs (renamed?):\n  ${[...new Set(missing)].join('\n  ')}`);
  process.exit(1);
}
const target = QUESTIONS.map((q) => index.get(q.answer) as number);
const docs = secs.map((s) => s.text);
const queries = QUESTIONS.map((q) => q.q);

const embedder = (factory: typeof lexicalHashFactory, engine: Record<string, unknown>): EmbeddingEngine => {
  const model = catalogEntry({ dimensions: 4096, context_window: 1_000_000, engine: engine as never });
  return factory.create(model.engine as never, engineContext(model));
};
const reranker = (factory: typeof bm25Factory, engine: Record<string, unknown>): RerankEngine => {
  const model = catalogEntry({ kind: 'rerank', context_window: 8192, engine: engine as never });
  return factory.create(model.engine as never, engineContext(model));
};

async function byEmbedding(e: EmbeddingEngine): Promise<{ scores: Scores; ms: number; e: EmbeddingEngine }> {
  await e.ready();
  const t = performance.now();
  const dv = (await e.embed(docs, neverAborted)).vectors;
  const qv = (await e.embed(queries, neverAborted)).vectors;
  const ms = performance.now() - t;
  return {
    scores: evaluate((qi) =>
      rankIn(
        dv.map((d) => cosine(qv[qi] as Float32Array, d)),
        target[qi] as number,
      ),
    ),
    ms,
    e,
  };
}

async function byRerank(e: RerankEngine): Promise<{ scores: Scores; ms: number }> {
  await e.ready();
  const t = performance.now();
  const all: number[][] = [];
  for (const q of queries) all.push((await e.rank(q, docs, neverAborted)).scores);
  const ms = performance.now() - t;
  return { scores: evaluate((qi) => rankIn(all[qi] as number[], target[qi] as number)), ms };
}

const gloveOver = args.glove ? (JSON.parse(args.glove) as Record<string, unknown>) : {};
const weights = args.weights?.split(',').map(Number);
const hybridSettings: Record<string, unknown> = { type: 'hybrid', ...gloveOver };
if (weights) hybridSettings.weights = { bm25: weights[0], semantic: weights[1] };

const t0 = performance.now();
const lexical = await byEmbedding(embedder(lexicalHashFactory, { type: 'lexical-hash' }));
const gloveEngine = embedder(gloveSifFactory, { type: 'glove-sif', ...gloveOver });
const tl = performance.now();
await gloveEngine.ready();
const gloveLoad = performance.now() - tl;
const glove = await byEmbedding(gloveEngine);
const bm25 = await byRerank(reranker(bm25Factory, { type: 'bm25' }));
const hybrid = await byRerank(reranker(hybridFactory as never, hybridSettings));
const np = QUESTIONS.filter((q) => q.paraphrase).length;

console.log(
  `\nretrieval over this repository's docs: ${secs.length} sections, ${QUESTIONS.length} questions (${np} paraphrased)`,
);
console.log(`glove-sif load (binary cached): ${gloveLoad.toFixed(0)} ms\n`);
const pct = (x: number) => `${(100 * x).toFixed(1)}%`.padStart(7);
const f3 = (x: number) => x.toFixed(3).padStart(6);
console.log('| engine        |    MRR | recall@5 | paraphrased: MRR | recall@5 | time (all questions) |');
console.log('| ------------- | ------ | -------- | ---------------- | -------- | -------------------- |');
for (const [name, r] of [
  ['lexical-hash', lexical],
  ['glove-sif', glove],
  ['bm25', bm25],
  [`hybrid${weights ? ` ${weights.join('/')}` : ''}`, hybrid],
] as const) {
  const s = r.scores;
  console.log(
    `| ${name.padEnd(13)} | ${f3(s.mrr)} | ${pct(s.r5)}  | ${f3(s.pmrr).padStart(16)} | ${pct(s.pr5)}  | ${`${r.ms.toFixed(0)} ms`.padStart(20)} |`,
  );
}

console.log('\nsimilarity check: cosine of a related pair vs a control pair (related must be higher)\n');
console.log('| related pair | control pair | lexical-hash | glove-sif |');
console.log('| --- | --- | --- | --- |');
const pass = { lexical: 0, glove: 0 };
for (const [[a, b], [c, d]] of SIMILARITY) {
  const cell = async (e: EmbeddingEngine) => {
    const [va, vb, vc, vd] = (await e.embed([a, b, c, d], neverAborted)).vectors as Float32Array[];
    const rel = cosine(va as Float32Array, vb as Float32Array);
    const ctl = cosine(vc as Float32Array, vd as Float32Array);
    return { rel, ctl, ok: rel > ctl };
  };
  const l = await cell(lexical.e);
  const g = await cell(glove.e);
  if (l.ok) pass.lexical++;
  if (g.ok) pass.glove++;
  const fmt = (x: { rel: number; ctl: number; ok: boolean }) =>
    `${x.rel.toFixed(2)} vs ${x.ctl.toFixed(2)} ${x.ok ? 'ok' : 'MISS'}`;
  console.log(`| ${a} / ${b} | ${c} / ${d} | ${fmt(l)} | ${fmt(g)} |`);
}
console.log(
  `\nrelated pair higher: lexical-hash ${pass.lexical}/${SIMILARITY.length}, glove-sif ${pass.glove}/${SIMILARITY.length}`,
);
console.log(`total ${(performance.now() - t0).toFixed(0)} ms`);
