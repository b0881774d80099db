// The Kubernetes manifests of k8s/, rendered by a real kustomize for every overlay and variant an
// operator can pick (dev, production with KEDA or HPAs, each with the gpu component on top, the Gateway
// API edge), each object validated against its schema, and the references between objects followed:
// every server app deployed, selectors that select, scalers on existing targets and on keys that exist
// (the BullMQ lists KEDA reads are checked against the installed bullmq on the machine's Redis), Secret
// keys present in the example Secret, images the repository builds.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  CatalogFileSchema,
  DEFAULT_QUEUE_PREFIX,
  OpenAIUpstreamEngineSchema,
  Queues,
} from '@infer/contracts';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { parse as parseYaml } from 'yaml';
import { ComfyUISettingsSchema } from '../../apps/image-service/src/engines/comfyui.js';
import {
  byKind,
  containersOf,
  find,
  K8S,
  type K8sObject,
  kustomizeVersion,
  parseManifests,
  podLabels,
  podSpec,
  REPO,
  render,
  renderVariant,
  selects,
  validateObject,
  workloads,
} from './k8s-support.js';

/** Every app of apps/ that runs as a server, by Deployment (two roles of one image where it has two). */
const SERVER_DEPLOYMENTS: Record<string, string[]> = {
  gateway: ['gateway', 'batch-runner'],
  'chat-service': ['chat-service'],
  'embedding-service': ['embedding-service'],
  'search-service': ['search-service'],
  'ledger-writer': ['ledger-writer'],
  'audio-service': ['audio-service', 'audio-worker'],
  'image-service': ['image-service', 'image-worker'],
};
/** Apps that are not servers (a command-line tool: runs as the gateway's migrate init container). */
// admin-cli runs as the migrate init container; the console's static build is served by the gateway.
const NOT_SERVERS = ['admin-cli', 'console'];
const APP_DEPLOYMENTS = Object.values(SERVER_DEPLOYMENTS).flat();
const GPU_ENGINES = ['vllm', 'tei-embed', 'tei-rerank', 'whisper', 'comfyui'];
/** Images the platform runs but does not build: pinned tags only. */
const THIRD_PARTY_IMAGES =
  /^(postgres|redis|nats|vllm\/vllm-openai|ghcr\.io\/huggingface\/text-embeddings-inference|ghcr\.io\/speaches-ai\/speaches|yanwk\/comfyui-boot):[\w.-]+$/;

interface Variant {
  name: string;
  overlay: 'dev' | 'production';
  change?: { add?: string[]; replace?: Record<string, string> };
  gpu: boolean;
  scaler: 'none' | 'keda' | 'hpa';
}
const VARIANTS: Variant[] = [
  { name: 'dev', overlay: 'dev', gpu: false, scaler: 'none' },
  { name: 'dev + gpu', overlay: 'dev', change: { add: ['gpu'] }, gpu: true, scaler: 'none' },
  { name: 'production (KEDA)', overlay: 'production', gpu: false, scaler: 'keda' },
  {
    name: 'production (KEDA) + gpu',
    overlay: 'production',
    change: { add: ['gpu', 'gpu-keda'] },
    gpu: true,
    scaler: 'keda',
  },
  {
    name: 'production (HPA)',
    overlay: 'production',
    change: { replace: { keda: 'hpa' } },
    gpu: false,
    scaler: 'hpa',
  },
  {
    name: 'production (HPA) + gpu',
    overlay: 'production',
    change: { replace: { keda: 'hpa' }, add: ['gpu'] },
    gpu: true,
    scaler: 'hpa',
  },
  {
    name: 'production + Gateway API',
    overlay: 'production',
    change: { add: ['gateway-api'] },
    gpu: false,
    scaler: 'keda',
  },
];

const exampleSecret = parseManifests(
  readFileSync(join(K8S, 'overlays/production/secret.example.yaml'), 'utf8'),
)[0]!;

/** The Secret the pods of a render read: generated in dev, the documented example in production. */
function secretKeys(objs: K8sObject[], overlay: Variant['overlay']): Set<string> {
  const s = overlay === 'dev' ? find(objs, 'Secret', 'infer-secrets') : exampleSecret;
  assert.ok(s, 'infer-secrets');
  return new Set(Object.keys({ ...(s.data ?? {}), ...(s.stringData ?? {}) }));
}

describe('k8s manifests', () => {
  const rendered = new Map<string, K8sObject[]>();
  before(() => {
    for (const v of VARIANTS) {
      rendered.set(
        v.name,
        v.change ? renderVariant(v.overlay, v.change) : render(join(K8S, 'overlays', v.overlay)),
      );
    }
  });
  const each = (fn: (objs: K8sObject[], v: Variant) => void | Promise<void>) => async () => {
    for (const v of VARIANTS) {
      try {
        await fn(rendered.get(v.name)!, v);
      } catch (e) {
        (e as Error).message = `[${v.name}] ${(e as Error).message}`;
        throw e;
      }
    }
  };

  it('renders with kustomize v5 or newer', () => {
    assert.match(kustomizeVersion(), /^v([5-9]|\d\d)\./);
    for (const v of VARIANTS) assert.ok(rendered.get(v.name)!.length > 40, v.name);
  });

  it(
    'validates every object against the Kubernetes, KEDA, Prometheus Operator and Gateway API schemas',
    each(async (objs) => {
      for (const o of objs) await validateObject(o);
    }),
  );

  it('the validator itself rejects a wrong type and a missing required field', async () => {
    await assert.rejects(
      validateObject({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'x' },
        spec: { replicas: 'two' },
      }),
      /replicas must be integer|must have required property/,
    );
    await assert.rejects(
      validateObject({
        apiVersion: 'keda.sh/v1alpha1',
        kind: 'ScaledObject',
        metadata: { name: 'x' },
        spec: { scaleTargetRef: {}, triggers: [] },
      }),
      /must have required property '?name'?/,
    );
    await assert.rejects(
      validateObject({ apiVersion: 'example.com/v1', kind: 'Thing', metadata: { name: 'x' } }),
      /no schema/,
    );
  });

  it(
    'deploys every server app of apps/ in every variant, all in the namespace infer',
    each((objs) => {
      const apps = readdirSync(join(REPO, 'apps')).filter((a) =>
        existsSync(join(REPO, 'apps', a, 'package.json')),
      );
      assert.deepEqual(
        apps.filter((a) => !NOT_SERVERS.includes(a)).sort(),
        Object.keys(SERVER_DEPLOYMENTS).sort(),
      );
      for (const name of APP_DEPLOYMENTS) assert.ok(find(objs, 'Deployment', name), `Deployment ${name}`);
      for (const o of objs)
        if (o.kind !== 'Namespace')
          assert.equal(o.metadata.namespace, 'infer', `${o.kind}/${o.metadata.name}`);
    }),
  );

  it(
    'gives every app a Service, probes on ports it opens, resources, a PDB and its own ServiceAccount without a token',
    each((objs) => {
      for (const w of workloads(objs)) {
        const name = w.metadata.name;
        assert.ok(
          selects(w.spec.selector, w.spec.template.metadata.labels),
          `${name}: selector matches its pods`,
        );
        const spec = podSpec(w);
        const sa = find(objs, 'ServiceAccount', spec.serviceAccountName);
        assert.ok(sa, `${name}: ServiceAccount ${spec.serviceAccountName}`);
        assert.equal(sa.automountServiceAccountToken, false, `${name}: SA token automount off`);
        assert.equal(spec.automountServiceAccountToken, false, `${name}: pod token automount off`);
        const svc = byKind(objs, 'Service').find((s) =>
          selects(s.spec.selector, w.spec.template.metadata.labels),
        );
        assert.ok(svc, `${name}: a Service selects it`);
        assert.ok(
          byKind(objs, 'PodDisruptionBudget').some((p) =>
            selects(p.spec.selector, w.spec.template.metadata.labels),
          ) || w.kind === 'StatefulSet',
          `${name}: PDB`,
        );
        for (const c of containersOf(w)) {
          assert.ok(
            c.resources?.requests?.cpu && c.resources?.requests?.memory,
            `${name}/${c.name}: requests`,
          );
          assert.ok(c.resources?.limits?.memory, `${name}/${c.name}: memory limit`);
        }
        const main = spec.containers[0];
        assert.ok(main.readinessProbe && main.livenessProbe, `${name}: readiness and liveness probes`);
        const portNames = new Set((main.ports ?? []).map((p: { name: string }) => p.name));
        for (const probe of [main.readinessProbe, main.livenessProbe, main.startupProbe].filter(Boolean)) {
          const port = probe.httpGet?.port ?? probe.tcpSocket?.port;
          if (typeof port === 'string') assert.ok(portNames.has(port), `${name}: probe port ${port}`);
        }
        // Services point at ports the pods open.
        for (const p of svc.spec.ports) {
          if (typeof p.targetPort === 'string')
            assert.ok(portNames.has(p.targetPort), `${svc.metadata.name} -> ${p.targetPort}`);
        }
      }
    }),
  );

  it(
    'probes the NATS services on the ops server (OPS_PORT=9464: /healthz, /readyz) and the gateway on its own routes',
    each((objs) => {
      const config = find(objs, 'ConfigMap', 'infer-config')!;
      assert.equal(config.data.OPS_PORT, '9464');
      for (const name of APP_DEPLOYMENTS) {
        const main = podSpec(find(objs, 'Deployment', name)!).containers[0];
        const path = main.readinessProbe.httpGet.path;
        assert.equal(path, '/readyz', name);
        assert.equal(main.livenessProbe.httpGet.path, '/healthz', name);
        if (name !== 'gateway') {
          assert.deepEqual(main.ports[0], { name: 'ops', containerPort: 9464 }, name);
          assert.ok(
            main.envFrom.some(
              (e: { configMapRef?: { name: string } }) => e.configMapRef?.name === 'infer-config',
            ),
          );
        }
      }
    }),
  );

  it(
    'hands each pod only the Secret keys it uses, all of them in the example Secret',
    each((objs, v) => {
      const keys = secretKeys(objs, v.overlay);
      const exampleKeys = secretKeys(objs, 'production');
      for (const w of workloads(objs)) {
        for (const c of containersOf(w)) {
          assert.ok(
            !(c.envFrom ?? []).some((e: { secretRef?: unknown }) => e.secretRef),
            `${w.metadata.name}/${c.name}: no whole-Secret envFrom`,
          );
          for (const e of c.env ?? []) {
            const ref = e.valueFrom?.secretKeyRef;
            if (!ref) continue;
            assert.equal(ref.name, 'infer-secrets');
            // Optional keys (engine keys, the admin token) may be left out of dev's Secret, never out of
            // the example an operator copies.
            if (!ref.optional)
              assert.ok(keys.has(ref.key), `${w.metadata.name}: key ${ref.key} missing from the Secret`);
            if (!w.spec.template.metadata.labels['infer.dev/backing']) {
              assert.ok(
                exampleKeys.has(ref.key),
                `${w.metadata.name}: key ${ref.key} missing from secret.example.yaml`,
              );
            }
          }
        }
      }
      for (const ta of byKind(objs, 'TriggerAuthentication')) {
        for (const r of ta.spec.secretTargetRef)
          assert.ok(keys.has(r.key), `TriggerAuthentication key ${r.key}`);
      }
      // Least privilege: the ledger-writer never sees Redis nor the admin token; engines no database.
      const envNames = (name: string) =>
        containersOf(find(objs, 'Deployment', name)!).flatMap((c) =>
          (c.env ?? []).map((e: { name: string }) => e.name),
        );
      assert.ok(!envNames('ledger-writer').includes('REDIS_URL'));
      assert.ok(!envNames('chat-service').includes('DATABASE_URL'));
      assert.ok(envNames('gateway').includes('ADMIN_TOKEN'));
      assert.ok(!envNames('image-worker').includes('ADMIN_TOKEN'));
    }),
  );

  it(
    'references only ConfigMaps that exist (or are marked optional)',
    each((objs) => {
      for (const w of workloads(objs)) {
        for (const c of containersOf(w)) {
          for (const e of c.envFrom ?? [])
            if (e.configMapRef) assert.ok(find(objs, 'ConfigMap', e.configMapRef.name), e.configMapRef.name);
        }
        for (const vol of podSpec(w).volumes ?? []) {
          if (vol.configMap && !vol.configMap.optional)
            assert.ok(find(objs, 'ConfigMap', vol.configMap.name), vol.configMap.name);
          if (vol.persistentVolumeClaim)
            assert.ok(find(objs, 'PersistentVolumeClaim', vol.persistentVolumeClaim.claimName));
        }
      }
    }),
  );

  it(
    'names only images the repository builds (docker/<app>.Dockerfile) or pinned third-party images',
    each((objs) => {
      for (const w of workloads(objs)) {
        for (const c of containersOf(w)) {
          const m = /^(?:registry\.example\.com\/)?infer\/([a-z-]+):([\w.-]+)$/.exec(c.image);
          if (m)
            assert.ok(
              existsSync(join(REPO, 'docker', `${m[1]}.Dockerfile`)),
              `${c.image}: docker/${m[1]}.Dockerfile`,
            );
          else assert.match(c.image, THIRD_PARTY_IMAGES, `${w.metadata.name}: ${c.image}`);
        }
      }
    }),
  );

  it(
    'scales each Deployment by at most one autoscaler on an existing target, with no replicas field to fight it',
    each((objs, v) => {
      const targets = [
        ...byKind(objs, 'ScaledObject').map((s) => s.spec.scaleTargetRef.name as string),
        ...byKind(objs, 'HorizontalPodAutoscaler').map((h) => h.spec.scaleTargetRef.name as string),
      ];
      assert.equal(new Set(targets).size, targets.length, `one autoscaler per target: ${targets}`);
      for (const t of targets) assert.ok(find(objs, 'Deployment', t), `scale target ${t}`);
      for (const d of byKind(objs, 'Deployment'))
        assert.equal(d.spec.replicas, undefined, `${d.metadata.name}: replicas`);
      if (v.scaler === 'keda') {
        assert.equal(byKind(objs, 'HorizontalPodAutoscaler').length, 0);
        for (const name of APP_DEPLOYMENTS) assert.ok(targets.includes(name), `${name} has a ScaledObject`);
        if (v.gpu)
          for (const e of GPU_ENGINES) assert.ok(targets.includes(e), `${e} scales with its service`);
      }
      if (v.scaler === 'hpa') {
        assert.equal(byKind(objs, 'ScaledObject').length, 0);
        for (const name of APP_DEPLOYMENTS) assert.ok(targets.includes(name), `${name} has an HPA`);
      }
      if (v.scaler === 'none') assert.equal(targets.length, 0);
    }),
  );

  it(
    'KEDA: NATS services on their requests in flight, workers on their BullMQ lists, GPU workers to zero',
    each((objs, v) => {
      if (v.scaler !== 'keda') return;
      for (const so of byKind(objs, 'ScaledObject')) {
        const name = so.metadata.name as string;
        for (const t of so.spec.triggers) {
          if (t.type === 'prometheus') {
            const m = /infer_rpc_inflight\{namespace="infer", service="([a-z-]+)"\}/.exec(t.metadata.query);
            if (m) assert.ok(find(objs, 'Deployment', m[1]!), `${name}: metric of ${m[1]}`);
          }
          if (t.type === 'redis') {
            const queues: string[] = Object.values(Queues);
            const m = /^(.+):([a-z-]+):(wait|active)$/.exec(t.metadata.listName);
            assert.ok(m, t.metadata.listName);
            assert.equal(m[1], DEFAULT_QUEUE_PREFIX);
            assert.ok(queues.includes(m[2]!), `${name}: queue ${m[2]}`);
            assert.equal(t.metadata.activationListLength, '0');
            assert.equal(t.authenticationRef.name, 'infer-redis');
            assert.ok(find(objs, 'TriggerAuthentication', 'infer-redis'));
          }
        }
      }
      for (const name of [
        'chat-service',
        'embedding-service',
        'search-service',
        'audio-service',
        'image-service',
      ]) {
        const t = find(objs, 'ScaledObject', name)!.spec.triggers;
        assert.ok(
          t.some((x: { metadata: { query?: string } }) => x.metadata.query?.includes('infer_rpc_inflight')),
          name,
        );
      }
      const image = find(objs, 'ScaledObject', 'image-worker')!;
      assert.equal(image.spec.minReplicaCount, 0);
      assert.deepEqual(
        image.spec.triggers.map((t: { metadata: { listName: string } }) => t.metadata.listName),
        [
          `${DEFAULT_QUEUE_PREFIX}:${Queues.imageJobs}:wait`,
          `${DEFAULT_QUEUE_PREFIX}:${Queues.imageJobs}:active`,
        ],
      );
      if (v.gpu) {
        for (const e of ['whisper', 'comfyui', 'audio-worker'])
          assert.equal(find(objs, 'ScaledObject', e)!.spec.minReplicaCount, 0, e);
      }
    }),
  );

  it(
    'schedules the GPU engines on the GPU pool with a model cache, health readiness and a catalog pointing at them',
    each((objs, v) => {
      if (!v.gpu) {
        for (const e of GPU_ENGINES) assert.equal(find(objs, 'Deployment', e), undefined);
        return;
      }
      for (const e of GPU_ENGINES) {
        const d = find(objs, 'Deployment', e);
        assert.ok(d, e);
        const spec = podSpec(d);
        const c = spec.containers[0];
        assert.equal(c.resources.limits['nvidia.com/gpu'], 1, e);
        assert.equal(spec.nodeSelector['nvidia.com/gpu.present'], 'true', e);
        assert.ok(
          spec.tolerations.some((t: { key: string }) => t.key === 'nvidia.com/gpu'),
          e,
        );
        assert.ok(c.readinessProbe.httpGet.path, e);
        assert.ok(
          c.volumeMounts.some((m: { name: string }) => m.name === 'model-cache'),
          e,
        );
      }
      const catalogMap = find(
        objs,
        'ConfigMap',
        find(objs, 'ConfigMap', 'infer-catalog') ? 'infer-catalog' : '',
      )!;
      const configName = byKind(objs, 'ConfigMap').find((c) => c.metadata.name.startsWith('infer-catalog'));
      assert.ok(catalogMap ?? configName, 'catalog ConfigMap');
      const catalog = CatalogFileSchema.parse(parseYaml((catalogMap ?? configName)!.data['catalog.yaml']));
      const services = new Map(byKind(objs, 'Service').map((s) => [s.metadata.name, s]));
      // Pooled engines are found by DNS discovery of a headless Service (one A record per ready pod,
      // fully qualified in the namespace); ComfyUI (not pooled) keeps a base_url.
      const namespace = find(objs, 'ConfigMap', 'infer-config')!.metadata.namespace;
      const hosts: string[] = [];
      for (const m of catalog.models) {
        const e = m.engine as { base_url?: string; discovery?: { dns: string } };
        if (e.discovery) {
          const [name, ns, ...rest] = e.discovery.dns.split('.');
          assert.equal(ns, namespace, `${m.id}: discovery name in the namespace`);
          assert.equal(rest.join('.'), 'svc.cluster.local');
          assert.equal(services.get(name!)?.spec.clusterIP, 'None', `${name} is a headless Service`);
          hosts.push(name!);
        } else if (e.base_url) {
          const h = new URL(e.base_url).hostname;
          assert.equal(h, 'comfyui', `${m.id}: only ComfyUI is reached by base_url`);
          hosts.push(h);
        }
      }
      assert.deepEqual([...new Set(hosts)].sort(), [...GPU_ENGINES].sort());
      for (const h of hosts) assert.ok(services.has(h), `catalog host ${h} is a Service`);
      assert.equal(
        find(objs, 'ConfigMap', 'infer-config')!.data.CATALOG_FILE,
        '/etc/infer/catalog/catalog.yaml',
      );
      // The engines' own settings schemas accept what the catalog says.
      const worker = podSpec(find(objs, 'Deployment', 'image-worker')!);
      for (const m of catalog.models) {
        if (m.kind === 'chat') OpenAIUpstreamEngineSchema.parse(m.engine);
        if (m.kind !== 'image') continue;
        const s = ComfyUISettingsSchema.parse(m.engine);
        // The workflow is mounted in the image-worker where the catalog says, with the output node it names.
        const file = s.workflow_file!;
        const mount = worker.containers[0].volumeMounts.find((vm: { mountPath: string }) =>
          file.startsWith(`${vm.mountPath}/`),
        );
        assert.ok(mount, 'workflow mounted in the image-worker');
        const volume = worker.volumes.find((vol: { name: string }) => vol.name === mount.name);
        const workflow = JSON.parse(
          find(objs, 'ConfigMap', volume.configMap.name)!.data[file.split('/').pop()!],
        );
        assert.equal(workflow[s.output_node!].class_type, 'SaveImage');
        assert.match(JSON.stringify(workflow), /\{\{prompt\}\}/);
      }
    }),
  );

  it(
    'NetworkPolicies: default deny; only the ingress namespace reaches the gateway; every policy selects pods',
    each((objs) => {
      const nps = byKind(objs, 'NetworkPolicy');
      const deny = find(objs, 'NetworkPolicy', 'default-deny')!;
      assert.deepEqual(deny.spec.podSelector, {});
      assert.deepEqual(deny.spec.policyTypes, ['Ingress', 'Egress']);
      const pods = podLabels(objs);
      for (const np of nps) {
        if (Object.keys(np.spec.podSelector).length === 0) continue;
        assert.ok(
          pods.some((p) => selects(np.spec.podSelector, p.labels)),
          `${np.metadata.name} selects no pod`,
        );
      }
      // Ingress rules naming the gateway: only from namespaces (the ingress controller, monitoring).
      const gatewayLabels = pods.find((p) => p.name === 'gateway')!.labels;
      for (const np of nps.filter((n) => selects(n.spec.podSelector, gatewayLabels))) {
        for (const rule of np.spec.ingress ?? []) {
          for (const from of rule.from ?? [])
            assert.ok(from.namespaceSelector && !from.podSelector, np.metadata.name);
        }
      }
      // Engines are reached only by the service that uses them.
      for (const e of GPU_ENGINES) {
        const labels = pods.find((p) => p.name === e)?.labels;
        if (!labels) continue;
        const froms = nps
          .filter((n) => (n.spec.ingress ?? []).length && selects(n.spec.podSelector, labels))
          .flatMap((n) => n.spec.ingress.flatMap((r: { from?: unknown[] }) => r.from ?? []));
        const allowed = froms.map(
          (f) =>
            (f as { podSelector?: { matchLabels?: Record<string, string> } }).podSelector?.matchLabels?.[
              'app.kubernetes.io/name'
            ],
        );
        assert.deepEqual(
          allowed.filter((a) => a === undefined),
          [],
          `${e}: only pods of its service`,
        );
      }
    }),
  );

  it(
    "edge: the gateway's /metrics is not published: it is served on METRICS_PORT, a container port no Service, Ingress or route reaches",
    each((objs) => {
      const config = find(objs, 'ConfigMap', 'gateway-config')!.data;
      const metricsPort = Number(config.METRICS_PORT);
      assert.ok(metricsPort > 0, 'gateway-config sets METRICS_PORT');
      assert.notEqual(metricsPort, Number(config.PORT));
      const gw = containersOf(find(objs, 'Deployment', 'gateway')!).find((c) => c.name === 'gateway')!;
      const ports = gw.ports as { name: string; containerPort: number }[];
      const http = ports.find((p) => p.name === 'http')!;
      assert.equal(http.containerPort, Number(config.PORT));
      assert.equal(ports.find((p) => p.name === 'metrics')?.containerPort, metricsPort);
      // What the public edge can reach: the gateway Service's ports, and they name only `http`.
      const service = find(objs, 'Service', 'gateway')!;
      for (const p of service.spec.ports) {
        assert.notEqual(p.targetPort, 'metrics');
        assert.notEqual(Number(p.targetPort), metricsPort);
      }
      const ingress = find(objs, 'Ingress', 'gateway');
      for (const rule of ingress?.spec.rules ?? [])
        for (const path of rule.http.paths) {
          assert.equal(path.backend.service.name, 'gateway');
          assert.ok(
            service.spec.ports.some((p: { name: string }) => p.name === path.backend.service.port.name),
          );
        }
      const monitor = find(objs, 'PodMonitor', 'gateway');
      if (monitor) assert.equal(monitor.spec.podMetricsEndpoints[0].port, 'metrics');
    }),
  );

  it(
    'edge: TLS from cert-manager; the gateway trusts only a narrow proxy range for client IPs',
    each((objs, v) => {
      const ingress = find(objs, 'Ingress', 'gateway');
      const route = find(objs, 'HTTPRoute', 'gateway');
      if (v.change?.add?.includes('gateway-api')) {
        assert.equal(ingress, undefined);
        assert.ok(route);
        const gw = find(objs, 'Gateway', route.spec.parentRefs[0].name)!;
        assert.ok(gw.metadata.annotations['cert-manager.io/cluster-issuer']);
        assert.equal(route.spec.rules[0].backendRefs[0].name, 'gateway');
      } else {
        assert.ok(ingress);
        assert.ok(ingress.metadata.annotations['cert-manager.io/cluster-issuer']);
        assert.equal(ingress.spec.tls[0].hosts[0], ingress.spec.rules[0].host);
        assert.equal(ingress.spec.rules[0].http.paths[0].backend.service.name, 'gateway');
      }
      const proxies = find(objs, 'ConfigMap', 'gateway-config')!.data.TRUSTED_PROXIES.split(',');
      for (const p of proxies) {
        const m = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(p.trim());
        assert.ok(m, p);
        assert.ok(Number(m[2]) >= 16, `${p}: no blanket range`);
      }
    }),
  );

  it(
    'monitoring: PodMonitors select the apps, alerts cover errors, latency, backlog, ledger lag and the limits store',
    each((objs, v) => {
      if (v.overlay !== 'production') return;
      const pods = podLabels(objs);
      for (const name of APP_DEPLOYMENTS) {
        const labels = pods.find((p) => p.name === name)!.labels;
        assert.ok(
          byKind(objs, 'PodMonitor').some((m) => selects(m.spec.selector, labels)),
          `${name} scraped`,
        );
      }
      const alerts = byKind(objs, 'PrometheusRule').flatMap((r) =>
        r.spec.groups.flatMap((g: { rules: { alert: string }[] }) => g.rules.map((x) => x.alert)),
      );
      for (const a of [
        'InferHighErrorRate',
        'InferHighLatency',
        'InferQueueBacklog',
        'InferLedgerLag',
        'InferLimitsStoreDown',
      ]) {
        assert.ok(alerts.includes(a), a);
      }
    }),
  );

  it('reference backing servers: the CloudNativePG Cluster validates, NATS is a 3-node JetStream cluster', async () => {
    const [cluster] = parseManifests(readFileSync(join(K8S, 'reference/cloudnative-pg.yaml'), 'utf8'));
    await validateObject(cluster!);
    assert.equal(cluster!.spec.instances, 3);
    const nats = parseYaml(readFileSync(join(K8S, 'reference/nats-values.yaml'), 'utf8'));
    assert.equal(nats.config.cluster.enabled, true);
    assert.equal(nats.config.cluster.replicas, 3);
    assert.equal(nats.config.jetstream.enabled, true);
    assert.equal(nats.config.jetstream.fileStore.pvc.enabled, true);
    const prod = render(join(K8S, 'overlays/production'));
    assert.equal(find(prod, 'ConfigMap', 'infer-config')!.data.USAGE_STREAM_REPLICAS, '3');
  });
});

describe('the BullMQ keys KEDA reads (installed bullmq, real Redis)', () => {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 2 });
  const prefix = `k8stest:${Math.random().toString(36).slice(2)}`;
  const queueName = Queues.imageJobs;
  after(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('a waiting job is in the LIST <prefix>:<queue>:wait, a running one in the LIST :active', async () => {
    const connection = { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' };
    const queue = new Queue(queueName, { connection, prefix });
    await queue.add('job', { n: 1 });
    await queue.add('job', { n: 2 });
    assert.equal(await redis.type(`${prefix}:${queueName}:wait`), 'list');
    assert.equal(await redis.llen(`${prefix}:${queueName}:wait`), 2);
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let started!: () => void;
    const running = new Promise<void>((r) => {
      started = r;
    });
    const worker = new Worker(
      queueName,
      async () => {
        started();
        await held;
      },
      { connection, prefix, concurrency: 1 },
    );
    try {
      await running;
      assert.equal(await redis.type(`${prefix}:${queueName}:active`), 'list');
      assert.equal(await redis.llen(`${prefix}:${queueName}:active`), 1);
      assert.equal(await redis.llen(`${prefix}:${queueName}:wait`), 1);
    } finally {
      release();
      await worker.close();
      await queue.close();
    }
  });
});
