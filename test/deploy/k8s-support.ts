/**
 * Rendering and checking the Kubernetes manifests of k8s/: a real kustomize (the one built into kubectl,
 * found or installed by scripts/kubectl.sh), the objects validated against the Kubernetes schemas
 * (npm kubernetes-models) and the CRDs' schemas (@kubernetes-models/keda, prometheus-operator,
 * gateway-api, cloudnative-pg), and helpers to follow references between objects.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments, parse as parseYaml, stringify } from 'yaml';

export const REPO = resolve(import.meta.dirname, '../..');
export const K8S = join(REPO, 'k8s');

// biome-ignore lint/suspicious/noExplicitAny: objects parsed from YAML, walked by path in the checks
type Loose = any;
export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; [k: string]: Loose };
  [k: string]: Loose;
};

let kubectlPath: string | undefined;
/** scripts/kubectl.sh: the machine's kubectl when its kustomize is v5+, else the pinned one it installs. */
export function kubectl(): string {
  kubectlPath ??= execFileSync('bash', [join(REPO, 'scripts/kubectl.sh')], { encoding: 'utf8' }).trim();
  return kubectlPath;
}

export function kustomizeVersion(): string {
  const out = execFileSync(kubectl(), ['version', '--client'], { encoding: 'utf8' });
  return /Kustomize Version: (v[\d.]+)/.exec(out)?.[1] ?? 'unknown';
}

export function parseManifests(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((d) => {
      if (d.errors.length) throw new Error(d.errors.map((e) => e.message).join('; '));
      return d.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

/** `kubectl kustomize DIR`, parsed. */
export function render(dir: string): K8sObject[] {
  const out = execFileSync(kubectl(), ['kustomize', dir], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return parseManifests(out);
}

/**
 * An overlay as an operator would change it: the overlay's folder copied next to it (so its relative
 * paths still hold), `components` edited (some replaced, some added), rendered, removed.
 */
export function renderVariant(
  overlay: 'dev' | 'production',
  change: { add?: string[]; replace?: Record<string, string> },
): K8sObject[] {
  const src = join(K8S, 'overlays', overlay);
  const tmp = mkdtempSync(join(K8S, 'overlays', `.variant-${overlay}-`));
  try {
    cpSync(src, tmp, { recursive: true });
    const file = join(tmp, 'kustomization.yaml');
    const k = parseYaml(readFileSync(file, 'utf8')) as { components?: string[] };
    let components = (k.components ?? []).map((c) => {
      const name = c.split('/').pop()!;
      return change.replace?.[name] ? `../../components/${change.replace[name]}` : c;
    });
    components = [...components, ...(change.add ?? []).map((c) => `../../components/${c}`)];
    writeFileSync(file, stringify({ ...k, components }));
    return render(tmp);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Which npm package holds the schema of an apiVersion's group. */
function modelModule(apiVersion: string): string {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  if (group === '') return `kubernetes-models/${version}`;
  if (group === 'keda.sh') return `@kubernetes-models/keda/keda.sh/${version}`;
  if (group === 'monitoring.coreos.com')
    return `@kubernetes-models/prometheus-operator/monitoring.coreos.com/${version}`;
  if (group === 'gateway.networking.k8s.io')
    return `@kubernetes-models/gateway-api/gateway.networking.k8s.io/${version}`;
  if (group === 'postgresql.cnpg.io')
    return `@kubernetes-models/cloudnative-pg/postgresql.cnpg.io/${version}`;
  return `kubernetes-models/${group}/${version}`;
}

/**
 * Validates one object against its kind's JSON schema (ajv inside kubernetes-models). Throws with the
 * schema's messages; throws too when no schema is known for the kind (nothing passes unchecked).
 */
export async function validateObject(o: K8sObject): Promise<void> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(modelModule(o.apiVersion))) as Record<string, unknown>;
  } catch {
    throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
  }
  const Model = mod[o.kind] as (new (d: unknown) => { validate(): void }) | undefined;
  if (!Model) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
  // kustomize folds long base64 values of a Secret's data over lines; the API server's decoder skips
  // line breaks, the schema's `byte` format does not: compare what the API server would decode.
  if (o.kind === 'Secret' && o.data) {
    o = {
      ...o,
      data: Object.fromEntries(Object.entries(o.data).map(([k, v]) => [k, String(v).replace(/\s+/g, '')])),
    };
  }
  try {
    new Model(o).validate();
  } catch (e) {
    throw new Error(`${o.kind}/${o.metadata?.name}: ${(e as Error).message}`);
  }
}

export const byKind = (objs: K8sObject[], kind: string) => objs.filter((o) => o.kind === kind);
export const find = (objs: K8sObject[], kind: string, name: string) =>
  objs.find((o) => o.kind === kind && o.metadata.name === name);

/** Deployments and StatefulSets: the objects that own pods. */
export const workloads = (objs: K8sObject[]) =>
  objs.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');

// biome-ignore lint/suspicious/noExplicitAny: pod spec of a workload
export const podSpec = (w: K8sObject): any => w.spec.template.spec;
// biome-ignore lint/suspicious/noExplicitAny: containers of a workload
export const containersOf = (w: K8sObject): any[] => [
  ...(podSpec(w).initContainers ?? []),
  ...(podSpec(w).containers ?? []),
];

/** Whether a label selector (matchLabels / matchExpressions, or a plain map) selects these labels. */
export function selects(
  selector:
    | {
        matchLabels?: Record<string, string>;
        matchExpressions?: { key: string; operator: string; values?: string[] }[];
      }
    | Record<string, string>,
  labels: Record<string, string>,
): boolean {
  const s = selector as {
    matchLabels?: Record<string, string>;
    matchExpressions?: { key: string; operator: string; values?: string[] }[];
  };
  const plain = !('matchLabels' in s) && !('matchExpressions' in s);
  const matchLabels = plain ? (selector as Record<string, string>) : (s.matchLabels ?? {});
  for (const [k, v] of Object.entries(matchLabels)) if (labels[k] !== v) return false;
  for (const e of plain ? [] : (s.matchExpressions ?? [])) {
    const has = e.key in labels;
    if (e.operator === 'In' && !(has && e.values!.includes(labels[e.key]!))) return false;
    if (e.operator === 'NotIn' && has && e.values!.includes(labels[e.key]!)) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

/** Pod labels of every workload in the render. */
export const podLabels = (objs: K8sObject[]) =>
  workloads(objs).map((w) => ({
    name: w.metadata.name,
    labels: w.spec.template.metadata.labels as Record<string, string>,
  }));
