// The embedding-service image's build step (package.json "image:prepare", run by tools/app-deps.js in the
// image's root): converts the GloVe word vectors once, for every vocabulary size the catalog's glove-sif
// and hybrid models use, into the app's word-vectors/ folder (SHIPPED_DIR, where the engines look whatever
// the cache directory: the image's INFER_CACHE_DIR is an empty tmpfs), then drops the package's 300 MB JSON, which only the conversion reads. A glove-sif model configured later
// with another vocabulary size or source needs that source installed (the engine says so at load).
//   node apps/embedding-service/dist/image-prepare.js [catalog file]     (default config/models.yaml)
import { readFileSync, rmSync } from 'node:fs';
import { parse } from 'yaml';
import { convertDefault, defaultSource, SHIPPED_DIR } from './engines/glove/store.js';

const DEFAULT_VOCAB = 200_000;
const file = process.argv[2] ?? 'config/models.yaml';
const catalog = parse(readFileSync(file, 'utf8')) as {
  models?: { engine?: { type?: string; vocab_size?: number; source?: string } }[];
};
const sizes = new Set<number>();
for (const m of catalog.models ?? []) {
  const e = m.engine;
  if ((e?.type === 'glove-sif' || e?.type === 'hybrid') && !e.source)
    sizes.add(e.vocab_size ?? DEFAULT_VOCAB);
}
if (sizes.size) {
  const source = defaultSource();
  for (const size of sizes) console.log(`image-prepare: ${await convertDefault(SHIPPED_DIR, size)}`);
  rmSync(source);
  console.log(`image-prepare: removed ${source}`);
}
