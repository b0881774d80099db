// The operator CLI: members, tiers, API keys, the model catalog and migrations.
// `run(argv)` returns the exit code; main.ts calls it. Every command takes --json for scripts.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  DEFAULT_MEMBER_INVITE_TTL,
  formatMoney,
  type InvalidationTarget,
  invitationUrl,
  type KeyLifecycleInput,
  KeyLimitsStateSchema,
  LimitsOverrideSchema,
  lifecycleChange,
  parseDuration,
  TIERS,
  type Tier,
  UpdateKeyRequestSchema,
  type UsageGroup,
  UsageGroupSchema,
} from '@infer/contracts';
import {
  type ApiKeyInfo,
  AuditRepository,
  createRepositories,
  databaseUrlFromEnv,
  inTransaction,
  isUserError,
  type Member,
  MemberInvitationsRepository,
  MembersRepository,
  migrateDeploy,
  migrateStatus,
  NotFoundError,
  PersistenceUserError,
  parseTier,
  type Repositories,
  redactUrl,
  usageReport,
} from '@infer/persistence';
import { announceChange } from './announce.js';
import { cliActor, OPERATOR_USAGE, operatorCommands } from './operator-commands.js';
import { SEARCH_USAGE, searchCommands } from './search-commands.js';

/** Repository root (this file is apps/admin-cli/{src,dist}/cli.*). */
const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const DEFAULT_CATALOG_FILE = resolve(REPO_ROOT, 'config', 'models.yaml');

export const USAGE = `infer admin CLI (env DATABASE_URL, default postgresql://postgres@127.0.0.1:5432/infer)

  member create --name N [--email E] --tier T     create a member (tiers: ${TIERS.join(', ')})
  member set-tier <memberId> <tier>               change a member's tier (all its keys follow)
  member list [--tier T]                          list members
  member log-bodies <memberId> on|off             log the member's request and response bodies
                                                  (redacted, capped, kept REQUEST_LOG_BODY_RETENTION_DAYS;
                                                  off by default; audited)
  member invite <memberId> [--email E] [--expires-in DURATION]
                                                  a one-time link where the member sets the password of
                                                  their account page (also a password reset; voids their
                                                  older links); valid MEMBER_INVITE_TTL (default 72h);
                                                  the link starts with PUBLIC_BASE_URL, else GATEWAY_URL,
                                                  else --gateway, else http://127.0.0.1:8080
  key mint <member> [--name N] [--expires-in DURATION | --expires-at ISO] [--models a,b] [--ips cidr,cidr]
                                                  create an API key; the key is printed once
                                                  (DURATION: 90m, 24h, 30d, 1h30m; --models: the only
                                                  models it may call; --ips: CIDR blocks it may be used from)
  key rotate <key> [--grace DURATION]             a new secret for the same key id, printed once; the old
                                                  secret works for DURATION (default 24h, 0: revoked now)
  key update <key> [--expires-in D | --expires-at ISO|never] [--models a,b] [--ips cidr,cidr]
                                                  change expiry and allow-lists ('' clears a list)
  key list [--member ID] [--sort expiring]        list keys (prefix only, never the key); expiring:
                                                  active keys with an expiry, soonest first
  key revoke <keyId-or-prefix>                    revoke a key (prefix looks like sk-inf-abc123)
  key limits <keyId-or-prefix>                    the key's limit overrides and, with GATEWAY_URL and
                                                  ADMIN_TOKEN set (or --gateway URL), the live state
                                                  of each of its limits from the gateway's /admin API
  key set-limits <keyId-or-prefix> '<json>'       set the key's limit overrides, e.g.
                                                  '{"key":{"requests_per_minute":120},
                                                    "models":{"chat-A":{"tokens_per_minute":3000000}}}'
  key clear-limits <keyId-or-prefix>              back to the tier's limits
  usage report [--from D] [--to D] [--member ID] [--key ID] [--model M] [--by member,key,model]
                                                  ledger totals for a period (default: this calendar
                                                  month, UTC; D is ISO 8601; --to is exclusive)
  models list [--all]                             enabled models, most capable first (--all: disabled too)
  models log-bodies <modelId> on|off              log the bodies of the model's requests (as above)
  catalog sync [--file config/models.yaml]        load the catalog file; models missing from it are disabled
  db migrate                                      create the database if needed and apply pending migrations
  db status                                       compare prisma/migrations with the database
  demo-keys [--rotate] [--env] [--file F]         one demo member per tier, a fresh key for each
                                                  (--rotate revokes their older demo keys,
                                                   --env prints INFER_DEMO_KEY_<TIER>=... lines,
                                                   --file F keeps them in F and shows them again
                                                   on later runs instead of minting new ones)

${SEARCH_USAGE}

${OPERATOR_USAGE}

  every command: --json (machine-readable output), -h/--help
exit codes: 0 ok, 1 error (unknown member/key/tier, invalid file, database), 2 bad usage`;

/** A usage mistake: printed with the usage text, exit code 2. */
class UsageError extends Error {}

/**
 * After a change the gateways cache (keys, members, limits, catalog): tell every gateway replica over
 * NATS so it applies at once (the console's admin API does the same); otherwise they follow at their
 * cache TTLs, which the CLI says on standard error.
 */
async function announce(ctx: Ctx, scope: 'keys' | 'catalog', target: InvalidationTarget = {}): Promise<void> {
  const r = await announceChange(ctx.env, [scope], target);
  if (!r.announced) {
    ctx.io.err(
      `note: could not tell the gateways over NATS (${r.reason}); they apply this change within their cache TTL`,
    );
  }
}

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  /** All of standard input (the operator commands' --password-stdin). */
  readStdin?(): Promise<string>;
}

async function readProcessStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const consoleIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

const OPTIONS = {
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
  name: { type: 'string' },
  email: { type: 'string' },
  tier: { type: 'string' },
  member: { type: 'string' },
  file: { type: 'string' },
  all: { type: 'boolean', default: false },
  rotate: { type: 'boolean', default: false },
  env: { type: 'boolean', default: false },
  from: { type: 'string' },
  to: { type: 'string' },
  key: { type: 'string' },
  model: { type: 'string' },
  by: { type: 'string' },
  gateway: { type: 'string' },
  source: { type: 'string' },
  'base-url': { type: 'string' },
  role: { type: 'string' },
  'password-stdin': { type: 'boolean', default: false },
  'expires-in': { type: 'string' },
  'expires-at': { type: 'string' },
  models: { type: 'string' },
  ips: { type: 'string' },
  grace: { type: 'string' },
  sort: { type: 'string' },
} as const;

type Values = {
  json: boolean;
  help: boolean;
  name?: string;
  email?: string;
  tier?: string;
  member?: string;
  file?: string;
  all: boolean;
  rotate: boolean;
  env: boolean;
  from?: string;
  to?: string;
  key?: string;
  model?: string;
  by?: string;
  gateway?: string;
  source?: string;
  'base-url'?: string;
  role?: string;
  'password-stdin'?: boolean;
  'expires-in'?: string;
  'expires-at'?: string;
  models?: string;
  ips?: string;
  grace?: string;
  sort?: string;
};

interface Ctx {
  values: Values;
  args: string[];
  io: CliIo;
  env: NodeJS.ProcessEnv;
  url: string;
  repos(): Repositories;
  /** Prints data as JSON with --json, else the human text. */
  print(data: unknown, human: () => string): void;
  readStdin(): Promise<string>;
}

function toJson(data: unknown): string {
  return JSON.stringify(data, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2);
}

function table(rows: string[][]): string {
  if (!rows.length) return '';
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '))
    .join('\n');
}

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : '-');

function memberRows(members: Member[]): string {
  if (!members.length) return 'no members';
  return table([
    ['ID', 'TIER', 'NAME', 'EMAIL', 'CREATED'],
    ...members.map((m) => [m.id, m.tier, m.name, m.email ?? '-', iso(m.createdAt)]),
  ]);
}

function keyRows(keys: ApiKeyInfo[]): string {
  if (!keys.length) return 'no keys';
  return table([
    ['ID', 'PREFIX', 'MEMBER', 'NAME', 'CREATED', 'LAST USED', 'EXPIRES', 'MODELS', 'IPS', 'STATUS'],
    ...keys.map((k) => {
      const old = oldSecretValidUntil(k);
      return [
        k.id,
        k.prefix,
        k.memberId,
        k.name,
        iso(k.createdAt),
        iso(k.lastUsedAt),
        k.expiresAt ? iso(k.expiresAt) : 'never',
        k.allowedModels.length ? k.allowedModels.join(',') : 'all',
        k.allowedIps.length ? k.allowedIps.join(',') : 'any',
        (k.revokedAt ? `revoked ${iso(k.revokedAt)}` : 'active') +
          (old ? `; old secret valid until ${iso(old)}` : ''),
      ];
    }),
  ]);
}

/** The latest grace end of a key's old secrets while it is in the future. */
function oldSecretValidUntil(k: ApiKeyInfo): Date | null {
  const until = k.oldSecrets[0]?.graceUntil;
  return until && until.getTime() > Date.now() && !k.revokedAt ? until : null;
}

/** A key as the CLI prints it with --json: the record plus "old secret valid until". */
const keyJson = (k: ApiKeyInfo) => ({ ...k, oldSecretValidUntil: oldSecretValidUntil(k) });

/** The lifecycle flags (--expires-in/--expires-at, --models, --ips), checked like the admin API checks them. */
function lifecycleFlags(values: Values) {
  const input: KeyLifecycleInput = {};
  if (values['expires-in'] !== undefined) input.expires_in = values['expires-in'];
  const at = values['expires-at'];
  if (at !== undefined) input.expires_at = /^(never|none)$/i.test(at) ? null : at;
  const list = (v: string) =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  if (values.models !== undefined) input.allowed_models = list(values.models);
  if (values.ips !== undefined) input.allowed_ips = list(values.ips);
  const parsed = UpdateKeyRequestSchema.safeParse(input);
  if (!parsed.success) {
    const flag: Record<string, string> = {
      expires_in: '--expires-in',
      expires_at: '--expires-at',
      allowed_models: '--models',
      allowed_ips: '--ips',
    };
    throw new UsageError(
      parsed.error.issues
        .map((i) => `${flag[String(i.path[0])] ?? i.path.join('.')}: ${i.message}`)
        .join('; '),
    );
  }
  return lifecycleChange(parsed.data);
}

function need(value: string | undefined, what: string): string {
  if (value === undefined || value.trim() === '') throw new UsageError(`missing ${what}`);
  return value.trim();
}

function noExtra(args: string[], count: number) {
  if (args.length > count) throw new UsageError(`unexpected argument: ${args[count]}`);
}

function parseDate(v: string, what: string): Date {
  const d = /^\d+$/.test(v) ? new Date(Number(v) * 1000) : new Date(v);
  if (Number.isNaN(+d)) throw new UsageError(`${what} must be an ISO 8601 date (or Unix seconds)`);
  return d;
}

/** GET {gateway}/admin/keys/{id}/limits with the admin token. */
async function fetchKeyLimits(gateway: string, token: string, keyId: string) {
  const url = `${gateway.replace(/\/+$/, '')}/admin/keys/${encodeURIComponent(keyId)}/limits`;
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
  } catch (e) {
    throw new Error(`cannot reach the gateway at ${gateway}: ${(e as Error).message}`);
  }
  const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
  if (!res.ok) throw new Error(`gateway answered ${res.status}: ${body?.error?.message ?? 'no details'}`);
  return KeyLimitsStateSchema.parse(body);
}

type Handler = (ctx: Ctx) => Promise<number>;

function onOff(v: string): boolean {
  if (v === 'on' || v === 'off') return v === 'on';
  throw new UsageError(`expected on or off, got '${v}'`);
}

const commands: Record<string, Handler> = {
  'member create': async (ctx) => {
    noExtra(ctx.args, 0);
    const name = need(ctx.values.name, '--name');
    const tier = parseTier(need(ctx.values.tier, '--tier'));
    const member = await ctx.repos().members.create({ name, email: ctx.values.email ?? null, tier });
    ctx.print({ member }, () => `created member ${member.id} (${member.name}, ${member.tier})`);
    return 0;
  },

  'member set-tier': async (ctx) => {
    noExtra(ctx.args, 2);
    const id = need(ctx.args[0], '<memberId>');
    const tier = parseTier(need(ctx.args[1], '<tier>'));
    const member = await ctx.repos().members.setTier(id, tier);
    ctx.print({ member }, () => `member ${member.id} is now ${member.tier}`);
    await announce(ctx, 'keys', { memberIds: [member.id] });
    return 0;
  },

  'member log-bodies': async (ctx) => {
    noExtra(ctx.args, 2);
    const id = need(ctx.args[0], '<memberId>');
    const on = onOff(need(ctx.args[1], 'on|off'));
    const before = await ctx.repos().members.get(id);
    if (!before) throw new NotFoundError('member', id);
    const member = await inTransaction(ctx.repos().db, async (tx) => {
      const after = await new MembersRepository(tx).update(id, { logBodies: on });
      if (before.logBodies !== on)
        await new AuditRepository(tx).append(cliActor(), {
          action: on ? 'member.log_bodies_on' : 'member.log_bodies_off',
          targetType: 'member',
          targetId: id,
          before: { log_bodies: before.logBodies },
          after: { log_bodies: after.logBodies },
        });
      return after;
    });
    ctx.print({ member }, () => `member ${member.id}: bodies ${member.logBodies ? 'logged' : 'not logged'}`);
    // The switch travels with the member's cached keys.
    await announce(ctx, 'keys', { memberIds: [id] });
    return 0;
  },

  'models log-bodies': async (ctx) => {
    noExtra(ctx.args, 2);
    const id = need(ctx.args[0], '<modelId>');
    const on = onOff(need(ctx.args[1], 'on|off'));
    const db = ctx.repos().db;
    const before = await db.model.findUnique({ where: { id } });
    if (!before) throw new NotFoundError('model', id);
    await inTransaction(db, async (tx) => {
      await tx.model.update({ where: { id }, data: { logBodies: on } });
      if (before.logBodies !== on)
        await new AuditRepository(tx).append(cliActor(), {
          action: on ? 'model.log_bodies_on' : 'model.log_bodies_off',
          targetType: 'model',
          targetId: id,
          before: { log_bodies: before.logBodies },
          after: { log_bodies: on },
        });
    });
    ctx.print({ model: id, log_bodies: on }, () => `model ${id}: bodies ${on ? 'logged' : 'not logged'}`);
    await announce(ctx, 'catalog');
    return 0;
  },

  'member list': async (ctx) => {
    noExtra(ctx.args, 0);
    const members = await ctx
      .repos()
      .members.list(ctx.values.tier ? { tier: parseTier(ctx.values.tier) } : {});
    ctx.print({ members }, () => memberRows(members));
    return 0;
  },

  'member invite': async (ctx) => {
    noExtra(ctx.args, 1);
    const memberId = need(ctx.args[0], '<memberId>');
    const ttlText = ctx.values['expires-in'] ?? ctx.env.MEMBER_INVITE_TTL ?? DEFAULT_MEMBER_INVITE_TTL;
    const ttlMs = parseDuration(ttlText);
    if (!ttlMs) throw new UsageError(`--expires-in: must be a duration such as 72h or 7d (got '${ttlText}')`);
    const base =
      ctx.env.PUBLIC_BASE_URL || ctx.env.GATEWAY_URL || ctx.values.gateway || 'http://127.0.0.1:8080';
    try {
      new URL(base);
    } catch {
      throw new UsageError(`the gateway's base URL is not a URL: ${base}`);
    }
    const actor = cliActor();
    const { token, invitation, member } = await inTransaction(ctx.repos().db, async (tx) => {
      const made = await new MemberInvitationsRepository(tx).create(memberId, {
        ttlMs,
        email: ctx.values.email,
        createdBy: actor.label,
      });
      await new AuditRepository(tx).append(actor, {
        action: 'member.invite',
        targetType: 'member',
        targetId: made.member.id,
        after: { email: made.member.email, expires_at: made.invitation.expiresAt.toISOString() },
      });
      return made;
    });
    const url = invitationUrl(base, token);
    ctx.print(
      { url, member_id: member.id, email: member.email, expires_at: invitation.expiresAt.toISOString() },
      () =>
        `invitation for ${member.name} <${member.email}>, valid until ${iso(invitation.expiresAt)}:\n${url}`,
    );
    return 0;
  },

  'key mint': async (ctx) => {
    noExtra(ctx.args, 1);
    const memberId = need(ctx.args[0], '<memberId>');
    const lifecycle = lifecycleFlags(ctx.values);
    const { key, record } = await ctx.repos().keys.mint(memberId, ctx.values.name ?? 'default', lifecycle);
    ctx.print(
      { key, record: keyJson(record) },
      () =>
        `${key}\n\nkey ${record.id} (${record.prefix}, "${record.name}") for member ${record.memberId}\n` +
        'This is the only time the key is shown: store it now.',
    );
    return 0;
  },

  'key list': async (ctx) => {
    noExtra(ctx.args, 0);
    const sort = ctx.values.sort ?? 'newest';
    if (sort !== 'newest' && sort !== 'expiring') throw new UsageError('--sort takes newest or expiring');
    const keys =
      sort === 'expiring'
        ? (await ctx.repos().keys.expiringSoonest({ memberId: ctx.values.member, limit: 10_000 })).rows
        : await ctx.repos().keys.list(ctx.values.member);
    ctx.print({ keys: keys.map(keyJson) }, () => keyRows(keys));
    return 0;
  },

  'key rotate': async (ctx) => {
    noExtra(ctx.args, 1);
    const ref = need(ctx.args[0], '<key>');
    const grace = ctx.values.grace ?? '24h';
    const graceMs = parseDuration(grace);
    if (graceMs === null)
      throw new UsageError(`--grace: must be a duration such as 0, 15m, 24h (got ${grace})`);
    const { key, record } = await ctx.repos().keys.rotate(ref, graceMs);
    ctx.print(
      { key, record: keyJson(record) },
      () =>
        `${key}\n\nkey ${record.id} (${record.prefix}, "${record.name}") rotated; ` +
        (graceMs
          ? `the old secret is valid until ${iso(new Date(Date.now() + graceMs))}`
          : 'the old secret is revoked') +
        '\nThis is the only time the new secret is shown: store it now.',
    );
    await announce(ctx, 'keys', { keyIds: [record.id] });
    return 0;
  },

  'key update': async (ctx) => {
    noExtra(ctx.args, 1);
    const ref = need(ctx.args[0], '<key>');
    const change = lifecycleFlags(ctx.values);
    if (!Object.keys(change).length)
      throw new UsageError('key update needs --expires-in, --expires-at, --models or --ips');
    const record = await ctx.repos().keys.updateLifecycle(ref, change);
    ctx.print({ record: keyJson(record) }, () => keyRows([record]));
    await announce(ctx, 'keys', { keyIds: [record.id] });
    return 0;
  },

  'key revoke': async (ctx) => {
    noExtra(ctx.args, 1);
    const record = await ctx.repos().keys.revoke(need(ctx.args[0], '<keyId-or-prefix>'));
    ctx.print({ record }, () => `revoked key ${record.id} (${record.prefix}) at ${iso(record.revokedAt)}`);
    await announce(ctx, 'keys', { keyIds: [record.id] });
    return 0;
  },

  'key limits': async (ctx) => {
    noExtra(ctx.args, 1);
    const ref = need(ctx.args[0], '<keyId-or-prefix>');
    const key = await ctx.repos().keys.find(ref);
    if (!key) throw new PersistenceUserError(`key not found: ${ref}`, 'not_found');
    const gateway = ctx.values.gateway ?? ctx.env.GATEWAY_URL;
    const token = ctx.env.ADMIN_TOKEN;
    let state: ReturnType<typeof KeyLimitsStateSchema.parse> | null = null;
    if (gateway && token) state = await fetchKeyLimits(gateway, token, key.id);
    ctx.print(
      {
        key: { id: key.id, prefix: key.prefix, memberId: key.memberId },
        overrides: key.limits ?? null,
        state,
      },
      () =>
        [
          `key ${key.id} (${key.prefix}) of member ${key.memberId}`,
          `overrides: ${key.limits ? JSON.stringify(key.limits) : "none (the tier's limits)"}`,
          state
            ? table([
                ['LIMIT', 'WINDOW', 'USED', 'LIMIT', 'REMAINING', 'RESETS', 'WHEN HIT'],
                ...state.limits.map((l) => [
                  l.name,
                  l.window,
                  String(l.used),
                  String(l.limit),
                  String(l.remaining),
                  l.resets_at ? new Date(l.resets_at * 1000).toISOString() : '-',
                  `${l.status} ${l.code}`,
                ]),
              ])
            : 'live state: set GATEWAY_URL (or --gateway) and ADMIN_TOKEN to read it from the gateway',
        ].join('\n'),
    );
    return 0;
  },

  'key set-limits': async (ctx) => {
    noExtra(ctx.args, 2);
    const ref = need(ctx.args[0], '<keyId-or-prefix>');
    const raw = need(ctx.args[1], "'<json>'");
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      throw new UsageError('the limits must be a JSON object');
    }
    const parsed = LimitsOverrideSchema.safeParse(json);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
      throw new PersistenceUserError(`invalid limits: ${issues.join('; ')}`, 'invalid_input');
    }
    const record = await ctx.repos().keys.setLimits(ref, parsed.data as Record<string, unknown>);
    ctx.print(
      { record },
      () => `key ${record.id} (${record.prefix}) limits: ${JSON.stringify(record.limits)}`,
    );
    await announce(ctx, 'keys', { keyIds: [record.id] });
    return 0;
  },

  'key clear-limits': async (ctx) => {
    noExtra(ctx.args, 1);
    const record = await ctx.repos().keys.setLimits(need(ctx.args[0], '<keyId-or-prefix>'), null);
    ctx.print({ record }, () => `key ${record.id} (${record.prefix}) is back to its tier's limits`);
    await announce(ctx, 'keys', { keyIds: [record.id] });
    return 0;
  },

  'usage report': async (ctx) => {
    noExtra(ctx.args, 0);
    const now = new Date();
    const from = ctx.values.from
      ? parseDate(ctx.values.from, '--from')
      : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const to = ctx.values.to
      ? parseDate(ctx.values.to, '--to')
      : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
    const groupBy: UsageGroup[] = [];
    for (const g of (ctx.values.by ?? 'member,key,model')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean)) {
      const r = UsageGroupSchema.safeParse(g);
      if (!r.success) throw new UsageError(`--by takes member, key, model and/or day (got ${g})`);
      if (!groupBy.includes(r.data)) groupBy.push(r.data);
    }
    const rows = (
      await usageReport(ctx.repos().db, {
        from,
        to,
        memberId: ctx.values.member,
        keyId: ctx.values.key,
        model: ctx.values.model,
        groupBy,
      })
    ).map((r) => ({ ...r, cost: formatMoney(r.cost) }));
    const label = (r: (typeof rows)[number], g: UsageGroup) =>
      g === 'member'
        ? `${r.memberName ?? ''} ${r.memberId}`.trim()
        : g === 'key'
          ? `${r.keyName ?? ''} ${r.keyPrefix ?? r.keyId}`.trim()
          : String(g === 'day' ? r.day : r.model);
    ctx.print({ from, to, groupBy, currency: 'usd', rows }, () =>
      rows.length
        ? `usage ${iso(from)} .. ${iso(to)}\n` +
          table([
            [
              ...groupBy.map((g) => g.toUpperCase()),
              'REQUESTS',
              'PROMPT',
              'COMPLETION',
              'TOTAL TOKENS',
              'COST (USD)',
            ],
            ...rows.map((r) => [
              ...groupBy.map((g) => label(r, g)),
              String(r.requests),
              String(r.promptTokens),
              String(r.completionTokens),
              String(r.totalTokens),
              r.cost,
            ]),
          ])
        : `no usage between ${iso(from)} and ${iso(to)}`,
    );
    return 0;
  },

  'models list': async (ctx) => {
    noExtra(ctx.args, 0);
    const all = await ctx.repos().catalog.listAll();
    const models = ctx.values.all ? all : all.filter((m) => m.enabled);
    ctx.print(
      ctx.values.all
        ? { models: models.map((m) => ({ ...m.entry, enabled: m.enabled })) }
        : { models: models.map((m) => m.entry) },
      () =>
        models.length
          ? table([
              [
                'RANK',
                'ID',
                'KIND',
                'TIERS',
                'CONTEXT',
                'ALLOWANCE',
                'ENGINE',
                ...(ctx.values.all ? ['ENABLED'] : []),
              ],
              ...models.map(({ entry: e, enabled }) => [
                String(e.rank),
                e.id,
                e.kind,
                e.tiers.join(','),
                e.context_window ? String(e.context_window) : '-',
                e.allowance ? `${e.allowance.tokens}/${e.allowance.period}` : '-',
                e.engine.type,
                ...(ctx.values.all ? [String(enabled)] : []),
              ]),
            ])
          : 'no models: run `catalog sync`',
    );
    return 0;
  },

  'catalog sync': async (ctx) => {
    noExtra(ctx.args, 0);
    const file = resolve(ctx.values.file ?? process.env.CATALOG_FILE ?? DEFAULT_CATALOG_FILE);
    if (!existsSync(file)) throw new UsageError(`catalog file not found: ${file}`);
    const result = await ctx.repos().catalog.syncFromFile(file);
    ctx.print(
      { file, ...result },
      () =>
        `synced ${result.upserted.length} model(s) from ${file}` +
        (result.disabled.length ? `\ndisabled (not in the file): ${result.disabled.join(', ')}` : ''),
    );
    await announce(ctx, 'catalog');
    return 0;
  },

  'db migrate': async (ctx) => {
    noExtra(ctx.args, 0);
    const r = await migrateDeploy(ctx.url);
    ctx.print(r, () =>
      [
        r.createdDatabase ? `created database ${redactUrl(ctx.url)}` : null,
        r.applied.length
          ? `applied ${r.applied.length} migration(s): ${r.applied.join(', ')}`
          : 'no pending migrations',
      ]
        .filter(Boolean)
        .join('\n'),
    );
    return 0;
  },

  'db status': async (ctx) => {
    noExtra(ctx.args, 0);
    const s = await migrateStatus(ctx.url);
    ctx.print(s, () =>
      [
        `database ${redactUrl(ctx.url)}${s.databaseExists ? '' : ' (does not exist)'}`,
        ...s.migrations.map((m) => `  ${m.appliedAt ? 'applied' : 'pending'}  ${m.name}`),
        s.failed.length ? `failed: ${s.failed.join(', ')}` : null,
        s.edited.length ? `edited after being applied: ${s.edited.join(', ')}` : null,
        s.unknown.length ? `applied but not in prisma/migrations: ${s.unknown.join(', ')}` : null,
        s.upToDate
          ? 'up to date'
          : s.pending.length
            ? `${s.pending.length} pending migration(s)`
            : 'not up to date',
      ]
        .filter(Boolean)
        .join('\n'),
    );
    return s.upToDate ? 0 : 1;
  },

  'demo-keys': async (ctx) => {
    noExtra(ctx.args, 0);
    const { members, keys } = ctx.repos();
    const out: {
      tier: Tier;
      memberId: string;
      keyId: string;
      prefix: string;
      key: string;
      revoked: number;
    }[] = [];
    // `INFER_DEMO_KEY_<TIER>=<key>` lines, as --env prints them.
    const file = ctx.values.file;
    const saved = new Map<Tier, string>();
    if (file && existsSync(file)) {
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        const m = /^INFER_DEMO_KEY_([A-Z]+)=(\S+)$/.exec(line.trim());
        const tier = m?.[1]?.toLowerCase() as Tier | undefined;
        if (m && tier && (TIERS as readonly string[]).includes(tier)) saved.set(tier, m[2]!);
      }
    }
    for (const tier of TIERS) {
      const email = `demo-${tier}@infer.local`;
      let member = await members.findByEmail(email);
      if (!member) member = await members.create({ name: `Demo ${tier}`, email, tier });
      else if (member.tier !== tier) member = await members.setTier(member.id, tier);
      // --file keeps the demo keys across runs: a key still active there is shown again, not replaced
      // (keys are stored hashed: the file is the only place their text is kept).
      const kept = !ctx.values.rotate ? saved.get(tier) : undefined;
      if (kept) {
        const found = await keys.findActiveByKey(kept);
        if (found && !found.revoked && found.name === 'demo' && found.memberId === member.id) {
          out.push({
            tier,
            memberId: member.id,
            keyId: found.keyId,
            prefix: found.prefix,
            key: kept,
            revoked: 0,
          });
          continue;
        }
      }
      let revoked = 0;
      if (ctx.values.rotate) {
        for (const k of await keys.list(member.id)) {
          if (k.name === 'demo' && !k.revokedAt) {
            await keys.revoke(k.id);
            revoked++;
          }
        }
      }
      const { key, record } = await keys.mint(member.id, 'demo');
      out.push({ tier, memberId: member.id, keyId: record.id, prefix: record.prefix, key, revoked });
    }
    if (file) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, out.map((k) => `INFER_DEMO_KEY_${k.tier.toUpperCase()}=${k.key}\n`).join(''), {
        mode: 0o600,
      });
      chmodSync(file, 0o600);
    }
    if (ctx.values.env && !ctx.values.json) {
      for (const k of out) ctx.io.out(`INFER_DEMO_KEY_${k.tier.toUpperCase()}=${k.key}`);
      return 0;
    }
    ctx.print({ keys: out }, () =>
      table([['TIER', 'MEMBER', 'PREFIX', 'KEY'], ...out.map((k) => [k.tier, k.memberId, k.prefix, k.key])]),
    );
    return 0;
  },
  ...searchCommands((message) => new UsageError(message)),
  ...operatorCommands((message) => new UsageError(message)),
};

/** A short, stack-free description of infrastructure errors (no database, not migrated ...). */
function describeFailure(error: unknown, url: string): string {
  const e = error as { code?: string; message?: string; cause?: { kind?: string; originalCode?: string } };
  const message = e?.message ?? String(error);
  const kind = e?.cause?.kind;
  if (
    e?.code === 'ECONNREFUSED' ||
    e?.code === 'P1001' ||
    kind === 'DatabaseNotReachable' ||
    /ECONNREFUSED|connect ECONN/.test(message)
  ) {
    return `cannot reach PostgreSQL at ${redactUrl(url)} (is it running? set DATABASE_URL)`;
  }
  if (
    e?.code === '3D000' ||
    e?.code === 'P1003' ||
    kind === 'DatabaseDoesNotExist' ||
    /database .* does not exist/i.test(message)
  ) {
    return `database of ${redactUrl(url)} does not exist: run \`db migrate\` first`;
  }
  if (
    e?.code === 'P2021' ||
    e?.code === '42P01' ||
    kind === 'TableDoesNotExist' ||
    /relation .* does not exist|table .* does not exist/i.test(message)
  ) {
    return `database ${redactUrl(url)} is not migrated: run \`db migrate\` first`;
  }
  // Prisma's messages start with an "Invalid `prisma.x()` invocation" preamble: keep the last line.
  const lines = message.split('\n').filter((l) => l.trim());
  return lines[lines.length - 1]?.trim() ?? 'unknown error';
}

export async function run(
  argv: string[],
  io: CliIo = consoleIo,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true }) as never;
  } catch (error) {
    io.err(`error: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (!positionals.length) {
    (values.help ? io.out : io.err)(USAGE);
    return values.help ? 0 : 2;
  }
  const [first, second, ...rest] = positionals;
  let key = `${first} ${second ?? ''}`.trim();
  let args = rest;
  if (!commands[key] && commands[first!]) {
    key = first!;
    args = positionals.slice(1);
  }
  const handler = commands[key];
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (!handler) {
    io.err(`error: unknown command: ${positionals.join(' ')}\n\n${USAGE}`);
    return 2;
  }

  const url = databaseUrlFromEnv(env);
  let repos: Repositories | undefined;
  const ctx: Ctx = {
    values,
    args,
    io,
    env,
    url,
    repos: () => {
      repos ??= createRepositories(url);
      return repos;
    },
    print: (data, human) => io.out(values.json ? toJson(data) : human()),
    readStdin: io.readStdin ?? readProcessStdin,
  };
  try {
    return await handler(ctx);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`error: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    const message = isUserError(error) ? error.message : describeFailure(error, url);
    if (values.json)
      io.err(toJson({ error: { message, code: isUserError(error) ? error.code : 'failure' } }));
    else io.err(`error: ${message}`);
    if (!isUserError(error) && env.DEBUG) io.err(String((error as Error)?.stack ?? error));
    return 1;
  } finally {
    await repos?.close().catch(() => undefined);
  }
}
