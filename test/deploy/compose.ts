// deploy/compose.yaml with podman-compose, as docs/deploy.md says to run it: PostgreSQL made from Debian's package,
// the one-off migrate, two receivers, two workers, the console, and the demo profile (the sandbox, its account
// connected, a channel endpoint). Passes once stock reaches the channel endpoint as signed POSTs, every long-running
// service's health check passes, and the console answers through its published port. Run by `npm run test:deploy`
// after test/deploy/image.ts has built the image.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { freePort } from '../../src/db/embedded.ts';
import { until } from '../support/processes.ts';
import { buildImage, hasPodman, IMAGE, POSTGRES_IMAGE, podman } from './podman.ts';

const deploy = new URL('../../deploy/', import.meta.url).pathname;

t.test('compose up with the sandbox profile: stock reaches the channel endpoint', async (t) => {
  if (!hasPodman()) {
    t.fail('podman and podman-compose are needed: apt-get install podman podman-compose buildah runc mmdebstrap uidmap');
    return;
  }
  await buildImage((l) => t.comment(l));
  const project = `cs-compose-${randomBytes(3).toString('hex')}`;
  const port = await freePort();
  const env = { ...process.env, COMMERCE_SYNC_IMAGE: IMAGE, POSTGRES_IMAGE, CONSOLE_PORT: String(port) };
  const compose = (...args: string[]) => podman(['compose', '-p', project, ...args], { cwd: deploy, env });
  t.teardown(async () => {
    // podman-compose 1.0 leaves the containers' anonymous volumes, the named volumes and the network behind.
    const names = (await podman(['ps', '-a', '-q', '--filter', `label=io.podman.compose.project=${project}`])).out
      .split('\n')
      .filter(Boolean);
    if (names.length) await podman(['rm', '-f', '-v', '-t', '10', ...names]);
    const down = await compose('down', '-v', '-t', '10');
    if (down.code !== 0) t.comment(`compose down: ${down.out.slice(-1000)}`);
    const vols = (await podman(['volume', 'ls', '-q', '--filter', `label=io.podman.compose.project=${project}`])).out
      .split('\n')
      .filter(Boolean);
    for (const v of vols) await podman(['volume', 'rm', '-f', v]);
    await podman(['network', 'rm', '-f', `${project}_default`]);
  });
  const started = Date.now();
  // podman-compose 1.0 (Debian 12's) knows no profiles and starts every service: there plain `up` is the demo.
  const profiles = (await podman(['compose', '--help'])).out.includes('--profile');
  const up = await compose(...(profiles ? ['--profile', 'sandbox'] : []), 'up', '-d');
  t.equal(up.code, 0, `podman-compose ${profiles ? '--profile sandbox ' : ''}up -d`, { output: up.out.slice(-3000) });
  if (up.code !== 0) return;

  const containers = async () =>
    JSON.parse((await podman(['ps', '-a', '--format', 'json', '--filter', `label=io.podman.compose.project=${project}`])).out) as {
      Names: string[];
      State: string;
      ExitCode: number;
      Labels: Record<string, string>;
    }[];
  const of = async (service: string) => (await containers()).filter((c) => c.Labels['com.docker.compose.service'] === service);
  const logs = async (service: string) =>
    (await Promise.all((await of(service)).map((c) => podman(['logs', c.Names[0]!])))).map((r) => r.out).join('\n');

  t.same(
    (await containers()).map((c) => c.Labels['com.docker.compose.service']).sort(),
    ['channel-endpoint', 'connect', 'console', 'migrate', 'postgres', 'receiver', 'receiver', 'sandbox.localhost', 'worker', 'worker'],
    'PostgreSQL, migrate, two receivers, two workers, the console and the demo',
  );
  await until(
    'migrate and connect to finish',
    async () => {
      const once = [...(await of('migrate')), ...(await of('connect'))];
      return once.every((c) => c.State === 'exited') ? true : once.map((c) => `${c.Names[0]} ${c.State}`).join(', ');
    },
    180_000,
    2000,
  );
  for (const s of ['migrate', 'connect']) {
    const [c] = await of(s);
    t.equal(c?.ExitCode, 0, `${s} ran once and exited 0`, { output: (await logs(s)).slice(-2000) });
  }
  let seen = '';
  await until(
    'stock at the channel endpoint',
    async () => {
      seen = (await logs('channel-endpoint'))
        .split('\n')
        .filter((l) => / = \d/.test(l))
        .slice(0, 5)
        .join('\n');
      return seen ? true : `endpoint: ${(await logs('channel-endpoint')).slice(-300)}; worker: ${(await logs('worker')).slice(-600)}`;
    },
    240_000,
    3000,
  );
  t.pass(`stock reached the channel endpoint ${((Date.now() - started) / 1000).toFixed(0)} s after up:\n${seen}`);
  t.notMatch(await logs('channel-endpoint'), /refused/, 'every POST to the endpoint was signed with CHANNEL_WEBHOOK_SECRET');

  for (const service of ['postgres', 'receiver', 'worker', 'console']) {
    for (const c of await of(service)) {
      await until(
        `${c.Names[0]} healthy`,
        async () => {
          const h = await podman(['healthcheck', 'run', c.Names[0]!]);
          return h.code === 0 ? true : h.out.trim() || `exit ${h.code}`;
        },
        60_000,
        2000,
      );
      t.pass(`${c.Names[0]}: its health check passes`);
    }
  }
  const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
  t.equal(ready.status, 200, 'the console answers /readyz through its published port');
  // Both receivers answer to the name `receiver` (PUBLIC_URL).
  for (const c of await of('receiver')) {
    const count = await podman([
      'exec',
      c.Names[0]!,
      'node',
      '-e',
      `fetch('http://127.0.0.1:3000/metrics', { headers: { authorization: 'Bearer ' + process.env.OPERATOR_TOKEN } }).then((r) => r.text()).then((t) => console.log((t.match(/^commerce_sync_deliveries_received_total\\{[^}]*\\} \\d+/gm) ?? []).map((l) => Number(l.split(' ').pop())).reduce((a, b) => a + b, 0)))`,
    ]);
    // The sandbox keeps its connection to the name alive, so one receiver may take them all: counted, not asserted.
    t.comment(`${c.Names[0]} stored ${count.out.trim()} deliveries`);
  }
});
