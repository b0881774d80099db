/**
 * The human-readable API reference, rendered from the OpenAPI document (buildOpenApiDocument) so that it
 * has no second copy of a field list: as Markdown (docs/api-reference.md, written by
 * tools/api-reference.ts) and as one self-contained HTML page (the gateway's GET /docs: inline CSS, no
 * script, nothing fetched from elsewhere). Both come from one intermediate model built here.
 */

type Json = Record<string, unknown>;

/** A reference to a component schema inside a text, replaced by a link by each renderer. */
const REF_OPEN = '\uE000';
const REF_CLOSE = '\uE001';
const refToken = (name: string) => `${REF_OPEN}${name}${REF_CLOSE}`;
const REF_RE = /\uE000([^\uE001]+)\uE001/g;

export interface ReferenceRow {
  name: string;
  type: string;
  required: boolean;
  notes: string;
}

export interface ReferenceOperation {
  method: string;
  path: string;
  summary: string;
  operationId: string;
  auth: string;
  parameters: ReferenceRow[];
  body: Array<{ contentType: string; type: string }>;
  responses: Array<{ status: string; description: string; content: string }>;
}

/** A component schema: one block of fields, or one block per member of a union (`oneOf`/`anyOf`). */
export interface ReferenceSchema {
  name: string;
  description: string;
  blocks: Array<{ label: string; type: string; rows: ReferenceRow[] }>;
}

export interface ReferenceModel {
  title: string;
  version: string;
  description: string;
  auth: Array<{ name: string; text: string }>;
  tags: Array<{ name: string; operations: ReferenceOperation[] }>;
  schemas: ReferenceSchema[];
}

const COMPONENT_PREFIX = '#/components/schemas/';

function refName(ref: string): string {
  return ref.startsWith(COMPONENT_PREFIX) ? ref.slice(COMPONENT_PREFIX.length) : ref;
}

function isNull(s: unknown): boolean {
  return typeof s === 'object' && s !== null && (s as Json).type === 'null';
}

/** A JSON Schema as a short type expression (`array of Message`, `string or null`, `"auto" | "none"`). */
export function typeText(schema: unknown): string {
  if (schema === true || schema === undefined) return 'any';
  if (typeof schema !== 'object' || schema === null) return 'any';
  const s = schema as Json;
  if (typeof s.$ref === 'string') return refToken(refName(s.$ref));
  if ('const' in s) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' \\| ');
  const union = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (Array.isArray(union)) {
    const nullable = union.some(isNull);
    const parts = [...new Set(union.filter((u) => !isNull(u)).map(typeText))];
    return `${parts.join(' or ')}${nullable ? ' or null' : ''}`;
  }
  if (Array.isArray(s.allOf) && s.allOf.length === 1) return typeText(s.allOf[0]);
  if (Array.isArray(s.type)) {
    const parts = (s.type as string[]).filter((t) => t !== 'null').map((t) => typeText({ ...s, type: t }));
    return `${parts.join(' or ')}${(s.type as string[]).includes('null') ? ' or null' : ''}`;
  }
  if (s.type === 'array') return `array of ${typeText(s.items)}`;
  if (s.type === 'object' && !s.properties && typeof s.additionalProperties === 'object') {
    return `map of ${typeText(s.additionalProperties)}`;
  }
  if (typeof s.type === 'string') return s.type === 'string' && s.format ? `string (${s.format})` : s.type;
  return 'any';
}

const SAFE = 9007199254740991;

/** Bounds, defaults and the description of a property, as one line. */
function notesOf(schema: unknown): string {
  if (typeof schema !== 'object' || schema === null) return '';
  const s = schema as Json;
  const parts: string[] = [];
  // Bounds sit on the non-null member of a nullable union.
  const members = [s, ...(((s.anyOf ?? s.oneOf) as Json[] | undefined) ?? []).filter((m) => !isNull(m))];
  for (const m of members) {
    const min = m.minimum ?? m.exclusiveMinimum;
    const max = m.maximum ?? m.exclusiveMaximum;
    if (typeof min === 'number' && min > -SAFE && typeof max === 'number' && max < SAFE) {
      parts.push(`${min} to ${max}`);
    } else if (typeof min === 'number' && min > -SAFE) parts.push(`>= ${min}`);
    else if (typeof max === 'number' && max < SAFE) parts.push(`<= ${max}`);
    if (typeof m.minLength === 'number' && m.minLength > 0) parts.push(`at least ${m.minLength} characters`);
    if (typeof m.maxLength === 'number') parts.push(`at most ${m.maxLength} characters`);
    if (typeof m.minItems === 'number' && m.minItems > 0) parts.push(`at least ${m.minItems} items`);
    if (typeof m.maxItems === 'number') parts.push(`at most ${m.maxItems} items`);
  }
  if ('default' in s) parts.push(`default ${JSON.stringify(s.default)}`);
  if (typeof s.description === 'string') parts.push(s.description);
  return [...new Set(parts)].join('; ');
}

/** The inline object of a property (itself or the non-null member of a nullable union), if any. */
function inlineObject(schema: unknown): Json | null {
  if (typeof schema !== 'object' || schema === null) return null;
  const s = schema as Json;
  if (s.type === 'object' && s.properties) return s;
  if (s.type === 'array' && typeof s.items === 'object' && (s.items as Json).type === 'object') {
    return (s.items as Json).properties ? (s.items as Json) : null;
  }
  const union = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (Array.isArray(union)) {
    const objects = union.filter((u) => !isNull(u) && u.type === 'object' && u.properties);
    if (objects.length === 1 && union.filter((u) => !isNull(u)).length === 1) return objects[0] as Json;
  }
  return null;
}

/** The properties of an object schema as rows; inline objects are flattened as `parent.child` (2 levels). */
function rowsOf(schema: Json, prefix = '', depth = 0): ReferenceRow[] {
  const props = (schema.properties ?? {}) as Record<string, unknown>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const rows: ReferenceRow[] = [];
  for (const [name, prop] of Object.entries(props)) {
    const inner = inlineObject(prop);
    const isArray = typeof prop === 'object' && prop !== null && (prop as Json).type === 'array';
    rows.push({
      name: `${prefix}${name}`,
      type: inner
        ? isArray
          ? 'array of object'
          : typeText({ ...(prop as Json), properties: undefined })
        : typeText(prop),
      required: required.has(name),
      notes: notesOf(prop),
    });
    if (inner && depth < 2) rows.push(...rowsOf(inner, `${prefix}${name}${isArray ? '[]' : ''}.`, depth + 1));
  }
  return rows;
}

/** What tells a union's member apart: its first property with a constant or enumerated value. */
function variantLabel(member: Json): string {
  for (const [name, prop] of Object.entries((member.properties ?? {}) as Record<string, Json>)) {
    if ('const' in prop || Array.isArray(prop.enum)) return `${name}: ${typeText(prop)}`;
  }
  return 'object';
}

function blocksOf(s: Json): ReferenceSchema['blocks'] {
  if (s.properties) return [{ label: '', type: 'object', rows: rowsOf(s) }];
  const union = (s.oneOf ?? s.anyOf) as Json[] | undefined;
  if (Array.isArray(union) && union.some((m) => m.properties)) {
    return union.map((m) =>
      m.properties
        ? { label: `one of: ${variantLabel(m)}`, type: 'object', rows: rowsOf(m) }
        : { label: 'one of', type: typeText(m), rows: [] },
    );
  }
  return [{ label: '', type: typeText(s), rows: [] }];
}

function contentText(content: unknown): string {
  if (typeof content !== 'object' || content === null) return '';
  return Object.entries(content as Record<string, Json>)
    .map(([type, media]) => (media.schema ? `${type}: ${typeText(media.schema)}` : type))
    .join('; ');
}

/** The reference's model: operations grouped by tag, in the document's order, then every component schema. */
export function referenceModel(doc: Json): ReferenceModel {
  const info = doc.info as Json;
  const schemes = ((doc.components as Json)?.securitySchemes ?? {}) as Record<string, Json>;
  const globalSecurity = (doc.security as Array<Record<string, unknown>> | undefined) ?? [];
  const authOf = (security: Array<Record<string, unknown>> | undefined) => {
    const list = security ?? globalSecurity;
    if (!list.length || list.every((s) => Object.keys(s).length === 0)) return 'none';
    return list.map((s) => Object.keys(s).join(' + ') || 'none').join(' or ');
  };
  const tags = new Map<string, ReferenceOperation[]>();
  for (const t of (doc.tags as Array<{ name: string }> | undefined) ?? []) tags.set(t.name, []);
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = ((op.tags as string[] | undefined) ?? ['Other'])[0] as string;
      const body = ((op.requestBody as Json | undefined)?.content ?? {}) as Record<string, Json>;
      const operation: ReferenceOperation = {
        method: method.toUpperCase(),
        path,
        summary: String(op.summary ?? ''),
        operationId: String(op.operationId ?? ''),
        auth: authOf(op.security as Array<Record<string, unknown>> | undefined),
        parameters: ((op.parameters as Json[] | undefined) ?? []).map((p) => ({
          name: `${p.name} (${p.in})`,
          type: typeText(p.schema),
          required: p.required === true,
          notes: [notesOf(p.schema), typeof p.description === 'string' ? p.description : '']
            .filter(Boolean)
            .join('; '),
        })),
        body: Object.entries(body).map(([contentType, media]) => ({
          contentType,
          type: typeText(media.schema),
        })),
        responses: Object.entries((op.responses ?? {}) as Record<string, Json>).map(([status, r]) => ({
          status,
          description: String(r.description ?? ''),
          content: contentText(r.content),
        })),
      };
      if (!tags.has(tag)) tags.set(tag, []);
      tags.get(tag)?.push(operation);
    }
  }
  const schemas = Object.entries(((doc.components as Json)?.schemas ?? {}) as Record<string, Json>).map(
    ([name, s]): ReferenceSchema => ({
      name,
      description: typeof s.description === 'string' ? s.description : '',
      blocks: blocksOf(s),
    }),
  );
  return {
    title: String(info.title),
    version: String(info.version),
    description: String(info.description ?? ''),
    auth: Object.entries(schemes).map(([name, s]) => ({
      name,
      text: String(s.description ?? `${s.type} ${s.scheme ?? ''}`.trim()),
    })),
    tags: [...tags].filter(([, ops]) => ops.length).map(([name, operations]) => ({ name, operations })),
    schemas,
  };
}

// ---- Markdown ---------------------------------------------------------------------------------------

/** One table cell: one line, pipes escaped, `<` and `>` outside code spans as entities. */
const mdCell = (s: string) =>
  s
    .replaceAll('\n', ' ')
    .replace(/(?<!\\)\|/g, '\\|')
    .split('`')
    .map((part, i) => (i % 2 ? part : part.replaceAll('<', '&lt;').replaceAll('>', '&gt;')))
    .join('`');
const mdAnchor = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replaceAll(' ', '-');
const mdLinks = (s: string) => s.replace(REF_RE, (_, name: string) => `[${name}](#${mdAnchor(name)})`);
/** Text outside a table: pipes as they are. */
const mdText = (s: string) => mdLinks(mdCell(s).replaceAll('\\|', '|'));

function mdTable(head: string[], rows: string[][]): string[] {
  return [
    `| ${head.join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.map((c) => mdLinks(mdCell(c))).join(' | ')} |`),
  ];
}

/** docs/api-reference.md. */
export function renderReferenceMarkdown(doc: Json): string {
  const m = referenceModel(doc);
  const out: string[] = [
    `# ${m.title} ${m.version}: reference`,
    '',
    '<!-- Generated by tools/api-reference.ts from the OpenAPI document of libs/contracts; do not edit by',
    '     hand. test/docs/api-reference.spec.ts fails when this page and the contracts differ. -->',
    '',
    m.description,
    '',
    'The same reference is served by the gateway as a web page at `GET /docs`, and as the OpenAPI 3.1',
    'document at `GET /openapi.json`. What the API promises beyond field lists (authentication, tiers,',
    'errors, limits): [api-contract.md](api-contract.md); choices where it is silent:',
    '[api-decisions.md](api-decisions.md).',
    '',
    '## Authentication',
    '',
    ...mdTable(
      ['scheme', 'how'],
      m.auth.map((a) => [a.name, a.text]),
    ),
    '',
    '## Operations',
    '',
  ];
  for (const t of m.tags) {
    out.push(
      `- ${t.name}: ${t.operations.map((o) => `[${o.method} ${o.path}](#${mdAnchor(`${o.method} ${o.path}`)})`).join(', ')}`,
    );
  }
  for (const t of m.tags) {
    out.push('', `## ${t.name} endpoints`);
    for (const o of t.operations) {
      out.push('', `### ${o.method} ${o.path}`, '', `${o.summary} (\`${o.operationId}\`; auth: ${o.auth}).`);
      if (o.parameters.length) {
        out.push('', 'Parameters:', '');
        out.push(
          ...mdTable(
            ['name', 'type', 'required', 'notes'],
            o.parameters.map((p) => [p.name, p.type, p.required ? 'yes' : '', p.notes]),
          ),
        );
      }
      if (o.body.length) {
        out.push('', 'Body:', '');
        out.push(
          ...mdTable(
            ['content type', 'schema'],
            o.body.map((b) => [b.contentType, b.type]),
          ),
        );
      }
      out.push('', 'Responses:', '');
      out.push(
        ...mdTable(
          ['status', 'meaning', 'content'],
          o.responses.map((r) => [r.status, r.description, r.content]),
        ),
      );
    }
  }
  out.push('', '## Schemas');
  for (const s of m.schemas) {
    out.push('', `### ${s.name}`, '');
    if (s.description) out.push(mdLinks(s.description), '');
    for (const b of s.blocks) {
      if (b.label) out.push(mdText(b.rows.length ? `${b.label}:` : `${b.label}: ${b.type}`), '');
      if (b.rows.length) {
        out.push(
          ...mdTable(
            ['field', 'type', 'required', 'notes'],
            b.rows.map((r) => [r.name, r.type, r.required ? 'yes' : '', r.notes]),
          ),
          '',
        );
      } else if (!b.label) out.push(mdText(`Type: ${b.type}`), '');
    }
    if (out[out.length - 1] === '') out.pop();
  }
  return `${out.join('\n')}\n`;
}

// ---- HTML -------------------------------------------------------------------------------------------

const esc = (s: string) =>
  s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
const htmlId = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, '-');
/** Escapes a text, turns `code` spans into <code> and schema references into links. */
function htmlText(s: string): string {
  return esc(s.replaceAll('\\|', '|'))
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(REF_RE, (_, name: string) => `<a href="#schema-${htmlId(name)}">${esc(name)}</a>`);
}

function htmlTable(head: string[], rows: string[][]): string {
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c) => `<td>${htmlText(c)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

const CSS = `body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fff}
main{max-width:1100px;margin:0 auto;padding:1rem 2rem 4rem}nav{columns:2;font-size:14px}
h1{margin-top:1rem}h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2.5rem}
h3{margin:1.8rem 0 .4rem;font-family:ui-monospace,monospace;font-size:16px}
.m{display:inline-block;min-width:3.6rem;padding:0 .3rem;border-radius:3px;color:#fff;background:#555;text-align:center}
.m-GET{background:#1f6f43}.m-POST{background:#1d4f91}.m-PUT{background:#7a4d00}.m-DELETE{background:#9b1c1c}.m-PATCH{background:#5b3a8c}
table{border-collapse:collapse;width:100%;margin:.4rem 0;font-size:14px}th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f5}code{font-family:ui-monospace,monospace;font-size:13px;background:#f3f3f3;padding:0 .2rem}
@media (prefers-color-scheme:dark){body{background:#161616;color:#e6e6e6}th{background:#222}th,td{border-color:#333}code{background:#262626}a{color:#8ab4f8}}`;

/** The gateway's GET /docs: one self-contained page (inline CSS, no script, no external resource). */
export function renderReferenceHtml(doc: Json): string {
  const m = referenceModel(doc);
  const parts: string[] = [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width,initial-scale=1">',
    `<title>${esc(m.title)} ${esc(m.version)}</title><style>${CSS}</style></head><body><main>`,
    `<h1>${esc(m.title)} <small>${esc(m.version)}</small></h1><p>${htmlText(m.description)}</p>`,
    '<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p>',
    '<h2 id="authentication">Authentication</h2>',
    htmlTable(
      ['scheme', 'how'],
      m.auth.map((a) => [a.name, a.text]),
    ),
    '<h2 id="operations">Operations</h2><nav>',
    ...m.tags.map(
      (t) =>
        `<div><strong>${esc(t.name)}</strong><ul>${t.operations
          .map(
            (o) =>
              `<li><a href="#op-${htmlId(`${o.method}-${o.path}`)}">${esc(o.method)} ${esc(o.path)}</a></li>`,
          )
          .join('')}</ul></div>`,
    ),
    '</nav>',
  ];
  for (const t of m.tags) {
    parts.push(`<h2 id="tag-${htmlId(t.name)}">${esc(t.name)}</h2>`);
    for (const o of t.operations) {
      parts.push(
        `<h3 id="op-${htmlId(`${o.method}-${o.path}`)}"><span class="m m-${esc(o.method)}">${esc(o.method)}</span> ${esc(o.path)}</h3>`,
        `<p>${htmlText(o.summary)} (<code>${esc(o.operationId)}</code>; auth: ${esc(o.auth)})</p>`,
      );
      if (o.parameters.length) {
        parts.push(
          htmlTable(
            ['parameter', 'type', 'required', 'notes'],
            o.parameters.map((p) => [p.name, p.type, p.required ? 'yes' : '', p.notes]),
          ),
        );
      }
      if (o.body.length) {
        parts.push(
          htmlTable(
            ['body', 'schema'],
            o.body.map((b) => [b.contentType, b.type]),
          ),
        );
      }
      parts.push(
        htmlTable(
          ['status', 'meaning', 'content'],
          o.responses.map((r) => [r.status, r.description, r.content]),
        ),
      );
    }
  }
  parts.push('<h2 id="schemas">Schemas</h2>');
  for (const s of m.schemas) {
    parts.push(`<section id="schema-${htmlId(s.name)}"><h3>${esc(s.name)}</h3>`);
    if (s.description) parts.push(`<p>${htmlText(s.description)}</p>`);
    for (const b of s.blocks) {
      if (b.label) parts.push(`<p>${htmlText(b.rows.length ? `${b.label}:` : `${b.label}: ${b.type}`)}</p>`);
      if (b.rows.length) {
        parts.push(
          htmlTable(
            ['field', 'type', 'required', 'notes'],
            b.rows.map((r) => [r.name, r.type, r.required ? 'yes' : '', r.notes]),
          ),
        );
      } else if (!b.label) parts.push(`<p>Type: ${htmlText(b.type)}</p>`);
    }
    parts.push('</section>');
  }
  parts.push('</main></body></html>');
  return parts.join('\n');
}
