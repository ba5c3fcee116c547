// deploy/kubernetes/ (a kustomize base) against the Kubernetes schemas (the kubernetes-models packages: types,
// required fields, quantities, enums), and against what docs/deploy.md promises of it: a Deployment per role with
// /healthz and /readyz probes and resource requests, the migrate Job, Services that find their pods, PodDisruptionBudgets,
// the three secrets, a non-root read-only container with DATA_DIR on a volume, and the release's image.
// The base is rendered here by the subset of kustomize it uses (resources, labels, images: anything else fails the
// test); where `kubectl` is on PATH, `kubectl kustomize` renders it too and both must agree.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseAllDocuments } from 'yaml';

const root = new URL('../../', import.meta.url).pathname;
const base = join(root, 'deploy/kubernetes');
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

type Obj = any;
const docs = (text: string): Obj[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter(Boolean);

const kustomization = docs(readFileSync(join(base, 'kustomization.yaml'), 'utf8'))[0];

/** kustomize build, for the fields this base uses. */
function render(): Obj[] {
  const objects = (kustomization.resources as string[]).flatMap((f) => docs(readFileSync(join(base, f), 'utf8')));
  for (const o of objects) {
    for (const l of kustomization.labels ?? []) o.metadata.labels = { ...o.metadata.labels, ...l.pairs };
    const spec = o.spec?.template?.spec ?? o.spec?.jobTemplate?.spec?.template?.spec;
    for (const c of [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])])
      for (const i of kustomization.images ?? []) if (c.image === i.name) c.image = `${i.newName ?? i.name}:${i.newTag}`;
  }
  return objects;
}

const key = (o: Obj) => `${o.kind}/${o.metadata.name}`;
const objects = render();
const byKind = (kind: string) => objects.filter((o) => o.kind === kind);

t.test('the kustomization uses only what this test renders', async (t) => {
  t.same(Object.keys(kustomization).sort(), ['apiVersion', 'images', 'kind', 'labels', 'resources'].sort());
  for (const l of kustomization.labels) t.equal(l.includeSelectors, false, 'labels stay out of selectors (immutable once applied)');
  t.same(
    kustomization.images.map((i: Obj) => i.newTag),
    [version],
    `the image is the release's (${version}); the release script sets it`,
  );
});

t.test('kubectl kustomize renders the same objects', async (t) => {
  const which = spawnSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' });
  if (which.status !== 0) {
    t.pass('kubectl is not on PATH here: the render above is the one checked');
    return;
  }
  const r = spawnSync('kubectl', ['kustomize', base], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  const theirs = new Map(docs(r.stdout).map((o) => [key(o), o]));
  t.same([...theirs.keys()].sort(), objects.map(key).sort());
  for (const o of objects) t.same(theirs.get(key(o)), o, `${key(o)} as kustomize renders it`);
});

t.test('every object validates against the Kubernetes schemas', async (t) => {
  for (const o of objects) {
    const [group, v] = o.apiVersion.includes('/') ? o.apiVersion.split('/') : [null, o.apiVersion];
    const mod = await import(`kubernetes-models/${group ? `${group}/` : ''}${v}/${o.kind}`);
    const Model = mod[o.kind] ?? mod.default;
    t.doesNotThrow(() => new Model(o).validate(), key(o));
  }
  // The schemas take any extra field: a misspelt one (livenesProbe) would pass them. Refuse the likely ones here.
  const text = JSON.stringify(objects);
  for (const typo of ['Probe"', 'envfrom', 'volumemounts', 'containerport'])
    t.notOk(new RegExp(`"(?!livenessProbe|readinessProbe|startupProbe)\\w*${typo}`).test(text), `no misspelt ${typo}`);
});

t.test('a Deployment per role, probed, sized, non-root, read-only, DATA_DIR on a volume', async (t) => {
  const config = byKind('ConfigMap').find((c) => c.metadata.name === 'commerce-sync-config');
  t.equal(config?.data.DATA_DIR, '/data');
  t.equal(config?.data.HOST, '0.0.0.0');
  const roles = new Map(byKind('Deployment').map((d) => [d.metadata.labels['app.kubernetes.io/component'], d]));
  t.same([...roles.keys()].sort(), ['console', 'receiver', 'worker']);
  const args = { receiver: ['receiver'], worker: ['worker'], console: ['start'] } as Record<string, string[]>;
  for (const [role, d] of roles) {
    t.test(role, async (t) => {
      t.same(d.spec.selector.matchLabels, d.spec.template.metadata.labels, 'the selector is the pods labels');
      const pod = d.spec.template.spec;
      const [c] = pod.containers;
      t.same(c.args, args[role]);
      t.equal(c.image, `localhost/commerce-sync:${version}`);
      const env = Object.fromEntries((c.env ?? []).map((e: Obj) => [e.name, e.value]));
      if (role === 'console') t.equal(env.ROLES, 'console');
      const port = c.ports.find((p: Obj) => p.name === 'http').containerPort;
      t.equal(String(port), role === 'worker' ? env.WORKER_PORT : config.data.PORT, 'the probed port is the one it serves on');
      t.equal(c.livenessProbe.httpGet.path, '/healthz');
      t.equal(c.readinessProbe.httpGet.path, '/readyz');
      t.ok(c.readinessProbe.timeoutSeconds > 5, '/readyz may wait 5 s for the database');
      t.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory, 'requests and a memory limit');
      t.equal(pod.securityContext.runAsNonRoot, true);
      t.equal(c.securityContext.readOnlyRootFilesystem, true);
      t.equal(c.securityContext.allowPrivilegeEscalation, false);
      t.same(c.securityContext.capabilities, { drop: ['ALL'] }, 'no capability');
      t.equal(pod.automountServiceAccountToken, false, 'no service account token: it has no use for the Kubernetes API');
      t.same(c.volumeMounts.map((m: Obj) => m.mountPath).sort(), ['/data', '/tmp']);
      t.same(
        c.envFrom.map((e: Obj) => e.configMapRef?.name ?? e.secretRef?.name),
        ['commerce-sync-config', 'commerce-sync-secrets'],
      );
      t.ok(pod.terminationGracePeriodSeconds >= 15, 'time for SIGTERM to finish running jobs (8 s) and commits');
    });
  }
  t.ok(roles.get('receiver').spec.template.spec.containers[0].lifecycle?.preStop, 'a receiver leaves its Service before it stops');
});

t.test('the migrate Job, the secrets, Services and disruption budgets fit the Deployments', async (t) => {
  const [job] = byKind('Job');
  const pod = job.spec.template.spec;
  t.same(pod.containers[0].args, ['migrate']);
  t.equal(pod.restartPolicy, 'Never');
  t.same(
    [pod.automountServiceAccountToken, pod.containers[0].securityContext],
    [false, { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } }],
    'the Job as least privileged as the Deployments',
  );
  const [secret] = byKind('Secret');
  for (const k of ['DATABASE_URL', 'COMMERCE_CLIENT_SECRET', 'TOKEN_ENCRYPTION_KEY', 'OPERATOR_TOKEN'])
    t.ok(secret.stringData[k], `the Secret holds ${k}`);
  const pods = [...byKind('Deployment'), ...byKind('Job')].map((d) => d.spec.template.metadata.labels);
  const selects = (sel: Record<string, string>) => pods.filter((l) => Object.entries(sel).every(([k, v]) => l[k] === v));
  const services = byKind('Service');
  t.same(services.map((s) => s.metadata.name).sort(), ['commerce-sync-console', 'commerce-sync-receiver', 'commerce-sync-worker']);
  for (const s of services) t.equal(selects(s.spec.selector).length, 1, `${s.metadata.name} selects one Deployment's pods`);
  for (const p of byKind('PodDisruptionBudget')) {
    const d = byKind('Deployment').find((d) =>
      Object.entries(p.spec.selector.matchLabels).every(([k, v]) => d.spec.template.metadata.labels[k] === v),
    );
    t.ok(d, `${p.metadata.name} selects a Deployment`);
    t.ok(d.spec.replicas > p.spec.minAvailable, `${p.metadata.name} lets one pod of ${d.spec.replicas} go at a time`);
  }
});

t.test('docs/deploy.md says how to run it and what each request assumes', async (t) => {
  const doc = readFileSync(join(root, 'docs/deploy.md'), 'utf8');
  t.match(doc, /kubectl apply -k/);
  for (const d of byKind('Deployment')) {
    const r = d.spec.template.spec.containers[0].resources;
    t.match(doc, `${r.requests.cpu}`, `${d.metadata.name}'s cpu request ${r.requests.cpu} is explained`);
    t.match(doc, `${r.requests.memory}`, `${d.metadata.name}'s memory request ${r.requests.memory} is explained`);
  }
});
