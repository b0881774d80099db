/**
 * Writes docs/configuration.md from the apps' config schemas: every environment variable per app, with
 * its type, default and meaning (the schema field's `.describe()` text).
 *   node --conditions=source --import ./tools/ts-register.js tools/config-doc.ts
 * test/docs/configuration.spec.ts fails when the committed page differs from what this writes, when a
 * schema field has no description, or when the source reads a variable the page does not list.
 *
 * SECTIONS below is the one list of schema modules: when an app's config moves, fix its import here.
 * Variables that are read outside any schema (OpenTelemetry's standard ones, the admin CLI's ...) are
 * described by the doc-only schemas in this file; the spec's source scan keeps that list complete.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ServiceEnvSchema } from '@infer/runtime';
import { z } from 'zod';
import { AudioEnvSchema } from '../apps/audio-service/src/config.js';
import { ChatServiceEnvSchema } from '../apps/chat-service/src/config.js';
import { BatchRunnerEnvSchema } from '../apps/gateway/src/batch/runner/app.js';
import { GatewayEnvSchema } from '../apps/gateway/src/config.js';
import { ImageEnvSchema } from '../apps/image-service/src/config.js';
import { LedgerWriterEnvSchema } from '../apps/ledger-writer/src/app.js';
import { SearchEnvSchema } from '../apps/search-service/src/config.js';

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CONFIGURATION_DOC = 'docs/configuration.md';

/** Doc-only: read by libs/telemetry (sdk.ts), libs/runtime (status.ts), libs/rpc (usage-stream.ts) with their own checks. */
const EveryAppEnvDoc = z.object({
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .string()
    .url()
    .optional()
    .describe(
      'OpenTelemetry traces go over OTLP/HTTP to this collector (`/v1/traces` is appended); unset: tracing off.',
    ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z
    .string()
    .url()
    .optional()
    .describe('The full traces URL, instead of OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`.'),
  OTEL_EXPORTER_OTLP_PROTOCOL: z
    .enum(['http/json', 'http/protobuf'])
    .default('http/json')
    .describe(
      'OTLP protocol (exported as JSON over HTTP either way); OTEL_EXPORTER_OTLP_TRACES_PROTOCOL wins.',
    ),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z
    .enum(['http/json', 'http/protobuf'])
    .optional()
    .describe('OTLP protocol of the traces (overrides OTEL_EXPORTER_OTLP_PROTOCOL).'),
  OTEL_SDK_DISABLED: z.enum(['true', 'false']).default('false').describe('`true` turns tracing off.'),
  OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none']).default('otlp').describe('`none` turns tracing off.'),
  OTEL_TRACES_SAMPLER: z
    .enum([
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ])
    .default('parentbased_always_on')
    .describe('Which requests are traced (ADR 0009).'),
  OTEL_TRACES_SAMPLER_ARG: z.coerce
    .number()
    .min(0)
    .max(1)
    .default(1)
    .describe('The ratio of the `traceidratio` samplers (0.1: one request in ten).'),
  OTEL_SERVICE_NAME: z
    .string()
    .optional()
    .describe(
      "The traces' service name; default: `service.name` of OTEL_RESOURCE_ATTRIBUTES, else the app's name.",
    ),
  OTEL_RESOURCE_ATTRIBUTES: z
    .string()
    .optional()
    .describe('Comma-separated key=value resource attributes of every span (URL-encoded values).'),
  OTEL_BSP_SCHEDULE_DELAY: z.coerce
    .number()
    .int()
    .min(0)
    .max(3_600_000)
    .default(5000)
    .describe('Batch span processor: longest wait between two exports (ms).'),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .default(512)
    .describe('Batch span processor: most spans in one export (at most OTEL_BSP_MAX_QUEUE_SIZE).'),
  OTEL_BSP_MAX_QUEUE_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .default(2048)
    .describe('Batch span processor: most spans waiting for export; more are dropped.'),
  OTEL_BSP_EXPORT_TIMEOUT: z.coerce
    .number()
    .int()
    .min(1)
    .default(30_000)
    .describe('Batch span processor: longest wait for one export (ms).'),
  SERVICE_VERSION: z
    .string()
    .optional()
    .describe(
      "The version an instance reports on the console's overview (image tag, git sha); default: the platform's package.json version.",
    ),
  USAGE_STREAM_REPLICAS: z.coerce
    .number()
    .int()
    .min(1)
    .max(5)
    .default(1)
    .describe(
      'Replicas of the usage JetStream stream when the gateway, the batch runner or the ledger writer creates it (3 on a NATS cluster).',
    ),
});

/** Doc-only: read by the embedding-service's GloVe word-vector store (engines/glove/store.ts). */
const EmbeddingEnvDoc = z.object({
  INFER_CACHE_DIR: z.string().optional().meta({
    description:
      'Where converted word vectors are cached; default: $XDG_CACHE_HOME/infer-platform, else var/cache.',
  }),
  XDG_CACHE_HOME: z.string().optional().describe('Used for the cache folder when INFER_CACHE_DIR is unset.'),
});

/** Doc-only: read by the audio-service's voice detection (media/vad.ts) before onnxruntime loads. */
const AudioEnvDoc = z.object({
  ORT_DISABLE_TELEMETRY: z.string().optional().meta({
    description:
      "onnxruntime's telemetry switch: the audio-service sets it to 1 when unset, so nothing is sent to Microsoft; set 0 to allow it.",
    docDefault: '1 (set by the service)',
  }),
});

/** Doc-only: read by apps/admin-cli and libs/persistence (database.ts, migrate/). */
const AdminCliEnvDoc = z.object({
  DATABASE_URL: z
    .string()
    .default('postgresql://postgres@127.0.0.1:5432/infer')
    .describe('PostgreSQL connection URL.'),
  CATALOG_FILE: z.string().optional().meta({
    description: 'The model catalog file that `catalog sync` loads.',
    docDefault: 'config/models.yaml',
  }),
  GATEWAY_URL: z
    .string()
    .url()
    .optional()
    .describe(
      "With ADMIN_TOKEN: `key limits` reads the key's live limit state from this gateway (or --gateway).",
    ),
  ADMIN_TOKEN: z
    .string()
    .optional()
    .describe("The gateway's ADMIN_TOKEN, for the commands that call the gateway."),
  DEBUG: z.string().optional().describe('Set: unexpected errors print their stack trace.'),
  PRISMA_SCHEMA: z
    .string()
    .optional()
    .meta({ description: '`db` commands: the Prisma schema.', docDefault: 'prisma/schema.prisma' }),
  PRISMA_MIGRATIONS_DIR: z
    .string()
    .optional()
    .meta({ description: '`db` commands: the migrations folder.', docDefault: 'prisma/migrations' }),
});

/** Doc-only: tests and development tools. */
const DevelopmentEnvDoc = z.object({
  TEST_DATABASE_URL: z
    .string()
    .optional()
    .describe('Tests: the server where each test stack creates its own database; default DATABASE_URL.'),
  CONSOLE_GATEWAY_URL: z
    .string()
    .url()
    .default('http://127.0.0.1:8080')
    .describe(
      "The console's development server (`npm run console:dev`) proxies /admin and /v1 to this gateway.",
    ),
});

export interface ConfigSection {
  /** Heading (and anchor) of the section. */
  title: string;
  /** Where the variables are read, for the reader. */
  source: string;
  about: string;
  schema: z.ZodType;
}

/** The one list of schema modules (see the header). */
export const SECTIONS: ConfigSection[] = [
  {
    title: 'every app',
    source: 'libs/telemetry (sdk.ts), libs/runtime (status.ts), libs/rpc (usage-stream.ts)',
    about:
      "Tracing (OpenTelemetry's standard variables, ADR 0009), the reported version and the usage stream's replicas; a value these do not know stops the start with a message naming it.",
    schema: EveryAppEnvDoc,
  },
  {
    title: 'gateway',
    source: 'apps/gateway/src/config.ts (GatewayEnvSchema)',
    about:
      'The public entry. Cross-field rules: IMAGE_URL_SECRET is required unless ALLOW_INSECURE_HTTP is on; TLS_CERT_FILE and TLS_KEY_FILE go together; CONSOLE_OIDC_ISSUER needs the client id, secret and redirect URL; CONSOLE_OIDC_AUTO_PROVISION needs CONSOLE_OIDC_ALLOWED_DOMAINS; IMAGE_STORE=s3 and FILE_STORE=s3 need their endpoint, bucket and keys.',
    schema: GatewayEnvSchema,
  },
  {
    title: 'batch runner',
    source: 'apps/gateway/src/batch/runner/app.ts (BatchRunnerEnvSchema)',
    about:
      "The gateway app's second entry point (`batch-runner`). The variables it shares with the gateway have the gateway's meaning and must match it (same queues, usage stream, limits keys and file store); it also reads every service process's variables below.",
    schema: BatchRunnerEnvSchema,
  },
  {
    title: 'every service process',
    source: 'libs/runtime/src/nest/microservice.ts (ServiceEnvSchema)',
    about:
      'Read by every process started as a Nest microservice or application context: chat-, embedding-, audio-, image- and search-service, the ledger writer and the batch runner (not the gateway, which serves /healthz, /readyz and /metrics on its own port).',
    schema: ServiceEnvSchema,
  },
  {
    title: 'ledger-writer',
    source: 'apps/ledger-writer/src/app.ts (LedgerWriterEnvSchema)',
    about: 'Writes the usage events of the JetStream stream to PostgreSQL in batches.',
    schema: LedgerWriterEnvSchema,
  },
  {
    title: 'chat-service',
    source: 'apps/chat-service/src/config.ts (ChatServiceEnvSchema)',
    about:
      'Besides these, an upstream engine of the catalog may name the variable holding its key (`api_key_env`); the same holds for the embedding-, audio- and image-service.',
    schema: ChatServiceEnvSchema,
  },
  {
    title: 'embedding-service',
    source: 'ServiceEnvSchema, and apps/embedding-service/src/engines/glove/store.ts',
    about: "Only every service process's variables, plus the word-vector cache folder.",
    schema: EmbeddingEnvDoc,
  },
  {
    title: 'audio-service',
    source: 'apps/audio-service/src/config.ts (AudioEnvSchema), and src/media/vad.ts',
    about:
      'Every variable has a default that works on one machine with the Debian speech tools on PATH (docs/platform-notes.md).',
    schema: AudioEnvSchema.extend(AudioEnvDoc.shape),
  },
  {
    title: 'image-service',
    source: 'apps/image-service/src/config.ts (ImageEnvSchema)',
    about: "The image store settings (IMAGE_STORE ...) must be the gateway's.",
    schema: ImageEnvSchema,
  },
  {
    title: 'search-service',
    source: 'apps/search-service/src/config.ts (SearchEnvSchema)',
    about: 'SEARCH_ENGINE=searxng needs SEARXNG_URL; SEARCH_ENGINE=brave needs BRAVE_API_KEY.',
    schema: SearchEnvSchema,
  },
  {
    title: 'admin-cli',
    source: 'apps/admin-cli/src/cli.ts, libs/persistence (database.ts, migrate/)',
    about: "The operators' command line (`npm run admin -- ...`).",
    schema: AdminCliEnvDoc,
  },
  {
    title: 'tests and development',
    source: 'libs/persistence/src/testing.ts, apps/console/vite.config.ts',
    about: 'Not read by any deployed process.',
    schema: DevelopmentEnvDoc,
  },
];

// ---- reading a schema -------------------------------------------------------------------------

type AnySchema = z.ZodType & { _zod: { def: Record<string, unknown> } };

function defOf(s: unknown): Record<string, unknown> & { type: string } {
  return (s as AnySchema)._zod.def as Record<string, unknown> & { type: string };
}

/** The fields of an object schema (refinements keep the object; a pipe's input is the object). */
export function shapeOf(schema: z.ZodType): Record<string, z.ZodType> {
  let s: unknown = schema;
  for (let i = 0; i < 5; i++) {
    const def = defOf(s);
    if (def.type === 'object') return def.shape as Record<string, z.ZodType>;
    s = def.in ?? def.innerType ?? def.schema;
    if (!s) break;
  }
  throw new Error('not an object schema');
}

interface Facts {
  kind?: 'number' | 'string' | 'enum' | 'boolean';
  int?: boolean;
  min?: number;
  max?: number;
  url?: boolean;
  minLength?: number;
  values?: string[];
}

/** Walks wrappers, pipes and checks to the base type and its bounds (transform bodies are not read). */
function collect(s: unknown, f: Facts): void {
  const def = defOf(s);
  switch (def.type) {
    case 'optional':
    case 'default':
    case 'prefault':
    case 'nullable':
    case 'readonly':
    case 'catch':
      collect(def.innerType, f);
      return;
    case 'pipe':
      collect(def.in, f);
      collect(def.out, f);
      return;
    case 'number': {
      f.kind ??= 'number';
      const n = s as z.ZodNumber;
      if (n.isInt) f.int = true;
      if (Number.isFinite(n.minValue) && (n.minValue as number) > Number.MIN_SAFE_INTEGER)
        f.min = n.minValue as number;
      if (Number.isFinite(n.maxValue) && (n.maxValue as number) < Number.MAX_SAFE_INTEGER)
        f.max = n.maxValue as number;
      return;
    }
    case 'string': {
      f.kind ??= 'string';
      for (const c of (def.checks as Array<{ _zod: { def: Record<string, unknown> } }> | undefined) ?? []) {
        const cd = c._zod.def;
        if (cd.check === 'string_format' && cd.format === 'url') f.url = true;
        if (cd.check === 'min_length') f.minLength = cd.minimum as number;
      }
      if (def.format === 'url') f.url = true;
      return;
    }
    case 'enum': {
      const values = Object.values(def.entries as Record<string, string>);
      if (values.includes('true') && values.includes('false') && values.includes('1')) f.kind ??= 'boolean';
      else {
        f.kind ??= 'enum';
        f.values ??= values;
      }
      return;
    }
    default:
      return;
  }
}

function code(v: string): string {
  return `\`${v}\``;
}

function typeText(f: Facts, listDefault: boolean): string {
  if (listDefault) return 'comma-separated list';
  switch (f.kind) {
    case 'boolean':
      return 'boolean';
    case 'enum':
      return `one of ${(f.values ?? []).map(code).join(', ')}`;
    case 'number': {
      const t = f.int ? 'integer' : 'number';
      if (f.min !== undefined && f.max !== undefined) return `${t}, ${f.min} to ${f.max}`;
      if (f.min !== undefined) return `${t}, >= ${f.min}`;
      if (f.max !== undefined) return `${t}, <= ${f.max}`;
      return t;
    }
    case 'string':
      if (f.url) return 'URL';
      return f.minLength && f.minLength > 1 ? `string, >= ${f.minLength} characters` : 'string';
    default:
      return 'string';
  }
}

interface Meta {
  description?: string;
  docDefault?: string;
}

function metaOf(s: z.ZodType): Meta {
  return ((s as unknown as { meta(): Meta | undefined }).meta() ?? {}) as Meta;
}

export interface Row {
  name: string;
  type: string;
  default: string;
  meaning: string | undefined;
}

export function rowOf(name: string, field: z.ZodType): Row {
  const meta = metaOf(field);
  const parsed = field.safeParse(undefined);
  const value: unknown = parsed.success ? parsed.data : undefined;
  const facts: Facts = {};
  collect(field, facts);
  let def: string;
  if (meta.docDefault !== undefined) def = meta.docDefault;
  else if (!parsed.success) def = 'required';
  else if (value === undefined) def = 'unset';
  else if (Array.isArray(value)) def = value.length ? code(value.join(',')) : 'empty';
  else if (value === '') def = 'empty';
  else def = code(String(value));
  return {
    name,
    type: typeText(facts, Array.isArray(value)),
    default: def,
    meaning: meta.description ?? field.description,
  };
}

export function rowsOf(section: ConfigSection): Row[] {
  return Object.entries(shapeOf(section.schema)).map(([name, field]) => rowOf(name, field));
}

/** Section and variable of every field that has no description. */
export function undescribed(): string[] {
  return SECTIONS.flatMap((s) =>
    rowsOf(s)
      .filter((r) => !r.meaning)
      .map((r) => `${s.title}: ${r.name}`),
  );
}

// ---- the page -----------------------------------------------------------------------------------

const cell = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ');

export function renderConfigurationDoc(): string {
  const out: string[] = [
    '# Configuration',
    '',
    '<!-- Generated by tools/config-doc.ts from the config schemas; do not edit by hand.',
    '     test/docs/configuration.spec.ts fails when this page and the schemas differ. -->',
    '',
    'Every app reads its settings from the environment and validates them once at start-up with a zod',
    'schema: a wrong value stops the process with a message naming the variable. This page is generated',
    'from those schemas, so it lists every variable each process reads, with its default and meaning.',
    '',
    'Booleans are written `1`/`0`, `true`/`false` or `yes`/`no` (empty: the default). Lists are',
    'comma-separated, blanks trimmed. Durations say their unit in the meaning (ms, seconds). The',
    'development scripts (`scripts/`) set a few development values (README.md, "Configuration");',
    'anything already set in the environment wins.',
    '',
    '## Contents',
    '',
    ...SECTIONS.map((s) => `- [${s.title}](#${s.title.replaceAll(' ', '-')})`),
  ];
  for (const s of SECTIONS) {
    out.push('', `## ${s.title}`, '', `Read by ${s.source}. ${s.about}`, '');
    out.push('| variable | type | default | meaning |', '| --- | --- | --- | --- |');
    for (const r of rowsOf(s)) {
      out.push(
        `| ${code(r.name)} | ${cell(r.type)} | ${cell(r.default)} | ${cell(r.meaning ?? '(not described)')} |`,
      );
    }
  }
  return `${out.join('\n')}\n`;
}

// ---- what the source reads ------------------------------------------------------------------------

/** Variable names the apps' and libs' sources read outside schemas: `env.NAME`, `env['NAME']`, bspInt(..., 'NAME'). */
export function envNamesReadInSource(root = REPO_ROOT): Set<string> {
  const names = new Set<string>();
  const patterns = [
    /\benv\??\.([A-Z][A-Z0-9_]{2,})\b/g,
    /\benv\[['"]([A-Z][A-Z0-9_]{2,})['"]\]/g,
    /process\.env\.([A-Z][A-Z0-9_]{2,})\b/g,
    /bspInt\(env, '([A-Z0-9_]+)'/g,
  ];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name === 'node_modules' || e.name === 'dist' || e.name === 'testing' || e.name.startsWith('.'))
        continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|tsx|mjs|js)$/.test(e.name) && !/\.spec\.tsx?$/.test(e.name)) {
        const text = readFileSync(p, 'utf8');
        for (const re of patterns) for (const m of text.matchAll(re)) names.add(m[1] as string);
      }
    }
  };
  for (const top of ['apps', 'libs']) {
    for (const project of readdirSync(join(root, top))) {
      for (const sub of ['src', 'vite.config.ts']) {
        const p = join(root, top, project, sub);
        try {
          if (sub === 'src') walk(p);
          else {
            const text = readFileSync(p, 'utf8');
            for (const re of patterns) for (const m of text.matchAll(re)) names.add(m[1] as string);
          }
        } catch {
          // no such folder or file
        }
      }
    }
  }
  return names;
}

/** Every variable the page lists. */
export function documentedNames(): Set<string> {
  return new Set(SECTIONS.flatMap((s) => Object.keys(shapeOf(s.schema))));
}

if (process.argv[1] && relative(process.argv[1], fileURLToPath(import.meta.url)) === '') {
  const missing = undescribed();
  if (missing.length) {
    console.error(`fields without a description:\n  ${missing.join('\n  ')}`);
    process.exit(1);
  }
  writeFileSync(join(REPO_ROOT, CONFIGURATION_DOC), renderConfigurationDoc());
  console.log(`wrote ${CONFIGURATION_DOC}`);
}
