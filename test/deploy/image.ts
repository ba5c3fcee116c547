// The image (Containerfile), built and run: its base made from Debian's packages here (scripts/base-images.sh), no
// registry being reachable. A receiver container and a worker container, each with a read-only root file system and
// DATA_DIR on a volume, as the non-root user, take the sandbox's signed deliveries and mirror them; they answer
// /healthz and /readyz, and exit 0 on SIGTERM. The same image runs `start` alone (the demo: embedded PostgreSQL in the
// volume, the sandbox in the process) on the bridge network with its port published. Prints the image's size.
// Run by `npm run test:deploy`.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { freePort } from '../../src/db/embedded.ts';
import { ackedProcessed, converged, drainSandbox, startWorld, steadyLoad, until } from '../reliability/harness.ts';
import { BASE, buildImage, extraCas, hasPodman, IMAGE, podman, version } from './podman.ts';

const TOKEN = 'image-test-operator-token-0123456789';
const run = `cs-image-${randomBytes(3).toString('hex')}`;

t.test('the image is built, and its containers take signed deliveries and mirror them', async (t) => {
  if (!hasPodman()) {
    t.fail('podman and podman-compose are needed: apt-get install podman podman-compose buildah runc mmdebstrap uidmap');
    return;
  }
  const size = await buildImage((l) => t.comment(l));
  t.ok(size > 0, `image ${IMAGE} (base ${BASE}): ${(size / 1e6).toFixed(0)} MB`);

  const inspect = JSON.parse((await podman(['image', 'inspect', IMAGE])).out)[0];
  t.same(inspect.Config.Entrypoint, ['commerce-sync'], 'entry point commerce-sync');
  t.same(inspect.Config.Cmd, ['start'], 'the role is the command (start by default)');
  t.equal(inspect.Config.User, 'node', 'runs as the non-root user node');
  t.ok(Object.keys(inspect.Config.Volumes ?? {}).includes('/data'), 'DATA_DIR /data is a volume');
  const v = await podman(['run', '--rm', IMAGE, '--version']);
  t.match(
    v.out.trim(),
    new RegExp(`^commerce-sync ${version.replace(/\./g, '\\.')} \\(schema \\d{4}_\\w+\\)$`),
    `--version: ${v.out.trim()}`,
  );
  const dev = await podman(['run', '--rm', '--entrypoint', 'sh', IMAGE, '-c', 'ls node_modules/tap node_modules/typescript 2>&1; id -u']);
  t.match(dev.out, /No such file[\s\S]*No such file[\s\S]*\n1000\n/, 'no development dependencies; uid 1000');
  const setuid = await podman([
    'run',
    '--rm',
    '--user',
    'root',
    '--entrypoint',
    'find',
    IMAGE,
    '/',
    '-xdev',
    '-type',
    'f',
    '-perm',
    '/6000',
  ]);
  t.same([setuid.code, setuid.out], [0, ''], 'no setuid or setgid program');
  // The build took this machine's extra CAs for npm ci alone (a build secret): a released image must not trust them.
  t.notOk(
    (inspect.Config.Env as string[]).some((e) => e.startsWith('NODE_EXTRA_CA_CERTS=')),
    'Node is given no extra CA file',
  );
  const body = (pem: string) => pem.replace(/-----[A-Z ]+-----|\s/g, '');
  const bundle = body((await podman(['run', '--rm', '--entrypoint', 'cat', IMAGE, '/etc/ssl/certs/ca-certificates.crt'])).out);
  const certs = extraCas().flatMap((pem) => pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []);
  t.ok(bundle.length > 10_000, "Debian's CA bundle is there");
  t.same(
    certs.filter((c) => bundle.includes(body(c))).length,
    0,
    `none of this machine's ${certs.length} extra CA certificates is trusted (scripts/base-images.sh --extra-ca opts in)`,
  );

  const world = await startWorld(t, { shops: 1 });
  const [shop] = world.shops;
  const volume = `${run}-data`;
  t.teardown(async () => {
    await podman(['rm', '-f', '-t', '0', `${run}-receiver`, `${run}-worker`]);
    await podman(['volume', 'rm', '-f', volume]);
  });
  const [port, workerPort] = [await freePort(), await freePort()];
  // The host's network: the database, the sandbox and the load balancer are this test's, on 127.0.0.1.
  const container = async (role: string, extra: Record<string, string | number>) => {
    const env = { ...world.env(extra), DATA_DIR: '/data', HOST: '127.0.0.1' };
    const r = await podman([
      'run',
      '-d',
      '--name',
      `${run}-${role}`,
      '--read-only',
      '-v',
      `${volume}:/data`,
      '--network',
      'host',
      ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
      IMAGE,
      role,
    ]);
    t.equal(r.code, 0, `${role} container started`, { output: r.out });
  };
  await container('receiver', { PORT: port });
  await container('worker', { WORKER_PORT: workerPort });
  const ready = (p: number) =>
    until(
      `:${p}/readyz 200`,
      async () => {
        const r = await fetch(`http://127.0.0.1:${p}/readyz`).catch((e: Error) => ({ status: 0, text: async () => e.message }));
        return r.status === 200 ? true : `${r.status} ${await r.text()}`;
      },
      60_000,
      500,
    );
  await ready(port);
  await ready(workerPort);
  t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200, 'the receiver answers /healthz and /readyz');
  t.pass('the worker answers /readyz on WORKER_PORT');

  world.proxy.targets.splice(0, world.proxy.targets.length, `http://127.0.0.1:${port}`);
  const stop = steadyLoad(t, shop!, 5);
  await until(
    'deliveries acknowledged by the container',
    () => (world.proxy.acked.size >= 30 ? true : `${world.proxy.acked.size}`),
    60_000,
  );
  await stop();
  await drainSandbox(shop!);
  await ackedProcessed(world.db, world.proxy.acked, { timeoutMs: 60_000 });
  t.pass(`${world.proxy.acked.size} signed deliveries acknowledged by the receiver container, all processed by the worker container`);
  t.same(
    [...world.proxy.statuses.keys()].filter((s) => Number(s) >= 500),
    [],
    'no 5xx',
  );
  // One full sweep by a one-off container, and the mirror equals the sandbox.
  const sweep = await podman([
    'run',
    '--rm',
    '--read-only',
    '--network',
    'host',
    ...Object.entries({ ...world.env(), DATA_DIR: '/tmp' }).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    IMAGE,
    'reconcile',
    '--full',
  ]);
  t.equal(sweep.code, 0, 'a one-off container (`reconcile --full`) runs a full sweep', { output: sweep.out.slice(-2000) });
  await converged(world, 60_000);
  t.pass('the mirror equals the sandbox');

  const write = await podman(['exec', `${run}-receiver`, 'sh', '-c', 'touch /app/x 2>&1; touch /data/x && echo data-writable']);
  t.match(write.out, /Read-only file system[\s\S]*data-writable/, 'the root file system is read-only, /data is not');
  for (const role of ['receiver', 'worker']) {
    const started = Date.now();
    await podman(['stop', '-t', '30', `${run}-${role}`]);
    const code = (await podman(['inspect', '--format', '{{.State.ExitCode}}', `${run}-${role}`])).out.trim();
    t.equal(code, '0', `the ${role} exits 0 on SIGTERM (${Date.now() - started} ms)`);
  }
});

t.test('the demo in one container: `start` on the bridge network with its port published', async (t) => {
  if (!hasPodman()) return;
  const port = await freePort();
  const name = `${run}-demo`;
  t.teardown(async () => {
    await podman(['rm', '-f', '-t', '0', name]);
    await podman(['volume', 'rm', '-f', `${name}-data`]);
  });
  const r = await podman([
    'run',
    '-d',
    '--name',
    name,
    '--read-only',
    '-v',
    `${name}-data:/data`,
    '-p',
    `127.0.0.1:${port}:3000`,
    '-e',
    'SANDBOX_VARIANTS=20',
    '-e',
    `OPERATOR_TOKEN=${TOKEN}`,
    IMAGE,
  ]);
  t.equal(r.code, 0, 'the demo container started', { output: r.out });
  await until(
    'the demo container ready',
    async () => {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null);
      return res?.status === 200 ? true : `${res?.status ?? 'no answer'}: ${(await podman(['logs', '--tail', '3', name])).out}`;
    },
    120_000,
    1000,
  );
  t.pass('embedded PostgreSQL in the /data volume under a read-only root, /readyz 200 through the published port');
  await until(
    'the demo sandbox delivering to the receiver',
    async () => {
      const m = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } }).then((r) => r.text());
      const n = /commerce_sync_deliveries_received_total\{[^}]*\} (\d+)/.exec(m)?.[1];
      return Number(n) > 0 ? true : `metrics: ${m.slice(0, 200)}`;
    },
    60_000,
    1000,
  );
  t.pass('the in-process sandbox delivers signed webhooks that the receiver stores');
  await podman(['stop', '-t', '30', name]);
  t.equal((await podman(['inspect', '--format', '{{.State.ExitCode}}', name])).out.trim(), '0', 'exits 0 on SIGTERM');
});
