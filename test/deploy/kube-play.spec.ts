// The Kubernetes manifests run by a real runtime: the dev overlay rendered by kustomize and played by
// `podman kube play`, so that the images, commands, init containers, env (ConfigMaps, the Secret),
// security contexts and volumes (emptyDir, ConfigMap, the PVC) of k8s/ are exercised, not only their
// schemas. What the rendering changes, and why: the backing StatefulSets are left out (kube play runs no
// StatefulSets, and their images cannot be pulled here): the Secret points at this test's own PostgreSQL,
// Redis and NATS instead; every pod runs on the host network (those servers listen on loopback only) with
// ports of its own; the images are the ones containers.spec.ts builds (engine-support.ts). Not covered
// (docs/deployment.md): Services' load balancing and DNS, Ingress, NetworkPolicies, KEDA and HPAs,
// PodDisruptionBudgets, probes beyond podman's health checks.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import {
  type PrivateServer,
  privateNats,
  privatePostgres,
  privateRedis,
} from '../support/private-servers.js';
import { waitFor } from '../support/wait-for.js';
import { demoKey, everyCapability } from './capabilities.js';
import { buildAll, ENGINE_ENV, image, podman, run, skipReason } from './engine-support.js';
import { containersOf, K8S, type K8sObject, podSpec, render } from './k8s-support.js';

/** podman's version as major * 100 + minor. */
function podmanVersion(): number {
  const v = /version (\d+)\.(\d+)/.exec(
    execFileSync('podman', ['--version'], { encoding: 'utf8', env: ENGINE_ENV }),
  );
  return v ? Number(v[1]) * 100 + Number(v[2]) : 0;
}

const base = skipReason();
const skip = base;
if (skip) console.log(`# kube play tests skipped: ${skip}`);
/**
 * podman 4.3 gives init containers the pod's restart policy (a Deployment's Always): the gateway's
 * migrate init container is restarted after it exits 0, and the play fails with "failed to remove once
 * init container ... as it is running". There the test plays pods that have init containers with
 * restartPolicy OnFailure (Kubernetes never restarts an init container that succeeded, whatever the pod's
 * policy; a failing one is still restarted). The manifests stay as they are.
 */
const initOnFailure = !base && podmanVersion() <= 403;
/**
 * podman 4.3 (Debian 12's) gets a container's environment wrong in two ways: it fails every pod whose env
 * reads a Secret through secretKeyRef (a played Secret is stored as YAML and read back as JSON: "secret
 * infer-secrets is not valid JSON"; one made with `podman secret create`: "illegal base64 data"), and
 * its envFrom ConfigMaps override the container's own env (Kubernetes: env wins). There the test, and only
 * the test, resolves each container's environment as Kubernetes does (envFrom first, then env; a
 * secretKeyRef from the rendered Secret; an optional key that is missing stays unset) and plays it as
 * literal values. The manifests stay as they are.
 */
const resolveEnv = !base && podmanVersion() <= 403;

type EnvVar = {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string };
  };
};
type EnvFrom = { configMapRef?: { name: string }; secretRef?: { name: string } };

/** A container's environment as Kubernetes resolves it, as literal values. */
function resolvedEnv(
  c: { env?: EnvVar[]; envFrom?: EnvFrom[] },
  maps: Record<string, Record<string, string>>,
  secrets: Record<string, Record<string, string>>,
): EnvVar[] {
  const env = new Map<string, string>();
  for (const f of c.envFrom ?? []) {
    const from = f.configMapRef ? maps[f.configMapRef.name] : secrets[f.secretRef?.name ?? ''];
    for (const [k, v] of Object.entries(from ?? {})) env.set(k, v);
  }
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef;
    const source = e.valueFrom?.secretKeyRef ? secrets : maps;
    const value = ref ? source[ref.name]?.[ref.key] : e.value;
    if (value === undefined) env.delete(e.name);
    else env.set(e.name, value);
  }
  return [...env].map(([name, value]) => ({ name, value }));
}

describe('podman kube play of the dev overlay', { skip, timeout: 80 * 60_000 }, () => {
  let pg: PrivateServer;
  let redis: PrivateServer;
  let nats: PrivateServer;
  const dir = mkdtempSync(join(tmpdir(), 'kube-play-'));
  const file = join(dir, 'dev.yaml');
  before(
    async () => {
      [pg, redis, nats] = await Promise.all([privatePostgres(), privateRedis(), privateNats()]);
      await buildAll();
    },
    { timeout: 70 * 60_000 },
  );
  const volumes: string[] = [];
  const removeVolumes = () =>
    Promise.all(volumes.map((v) => podman(['volume', 'rm', '-f', v]).catch(() => undefined)));
  after(async () => {
    await run('podman', ['kube', 'down', file], 120_000).catch(() => undefined);
    await removeVolumes();
    await Promise.all([pg?.destroy(), redis?.destroy(), nats?.destroy()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('every Deployment starts from its image and gets ready; every capability answers through the played gateway', async () => {
    const objs = render(join(K8S, 'overlays', 'dev'));
    let port = 20_000 + Math.floor(Math.random() * 500);
    const gatewayPort = port++;
    const opsPorts: Record<string, number> = {};
    const played: K8sObject[] = [];
    const secrets: Record<string, Record<string, string>> = {};
    for (const o of objs) {
      if (o.kind === 'ConfigMap' || o.kind === 'PersistentVolumeClaim') played.push(o);
      else if (o.kind === 'Secret') {
        const data = { ...(o.stringData ?? {}) } as Record<string, string>;
        for (const [k, v] of Object.entries(o.data ?? {}))
          data[k] = Buffer.from(String(v), 'base64').toString();
        if (o.metadata.name === 'infer-secrets')
          Object.assign(data, {
            DATABASE_URL: `${pg.url}/postgres`,
            REDIS_URL: redis.url,
            NATS_URL: nats.url,
          });
        secrets[o.metadata.name] = data;
        if (!resolveEnv) played.push({ ...o, data: undefined, stringData: data });
      } else if (o.kind === 'Deployment') {
        const spec = podSpec(o);
        spec.hostNetwork = true;
        if (initOnFailure && (spec.initContainers ?? []).length > 0) spec.restartPolicy = 'OnFailure';
        delete spec.topologySpreadConstraints;
        for (const c of containersOf(o)) {
          c.image = image(
            String(c.image)
              .replace(/^infer\//, '')
              .split(':')[0] as string,
          );
          c.imagePullPolicy = 'Never';
          delete c.lifecycle;
          // On the host network a containerPort is the process's own port: podman refuses port
          // mappings there ("PortMappings can only be used with Bridge or slirp4netns networking").
          delete c.ports;
          const ops = port++;
          c.env = [
            ...(c.env ?? []),
            { name: 'OPS_PORT', value: String(ops) },
            { name: 'AUDIO_METRICS_PORT', value: String(port++) },
            { name: 'METRICS_PORT', value: String(port++) },
            ...(o.metadata.name === 'gateway'
              ? [
                  { name: 'PORT', value: String(gatewayPort) },
                  { name: 'HOST', value: '127.0.0.1' },
                  { name: 'ALLOW_INSECURE_HTTP', value: '1' },
                ]
              : []),
          ];
          if (o.metadata.name !== 'gateway' && !(spec.initContainers ?? []).includes(c))
            opsPorts[o.metadata.name] = ops;
        }
        played.push(o);
      }
    }
    if (resolveEnv) {
      const maps = Object.fromEntries(
        played
          .filter((o) => o.kind === 'ConfigMap')
          .map((o) => [o.metadata.name, (o.data ?? {}) as Record<string, string>]),
      );
      for (const o of played.filter((p) => p.kind === 'Deployment'))
        for (const c of containersOf(o)) {
          c.env = resolvedEnv(c, maps, secrets);
          delete c.envFrom;
        }
    }
    writeFileSync(file, played.map((o) => stringify(o)).join('---\n'));
    // A claim is played as a podman volume of its name, which `kube down` leaves behind.
    volumes.push(...played.filter((o) => o.kind === 'PersistentVolumeClaim').map((o) => o.metadata.name));
    await removeVolumes();
    await run('podman', ['kube', 'play', file], 10 * 60_000);
    for (const [name, ops] of Object.entries(opsPorts))
      await waitFor(
        `${name} ready`,
        async () => (await fetch(`http://127.0.0.1:${ops}/readyz`).catch(() => null))?.ok,
        { timeoutMs: 300_000, everyMs: 1000 },
      );
    await waitFor(
      'the gateway ready (after its migrate init container)',
      async () => (await fetch(`http://127.0.0.1:${gatewayPort}/readyz`).catch(() => null))?.ok,
      { timeoutMs: 360_000, everyMs: 1000 },
    );
    const pods = await podman(['pod', 'ps', '--format', '{{.Name}} {{.Status}}']);
    for (const d of ['gateway', 'chat-service', 'embedding-service', 'ledger-writer'])
      assert.match(pods, new RegExp(`^${d}-pod(-\\d+)? Running`, 'm'));
    await everyCapability(`http://127.0.0.1:${gatewayPort}/v1`, await demoKey(`${pg.url}/postgres`));
  });
});
