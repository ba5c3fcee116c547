// deploy/compose.yaml with podman-compose, as docs/deploy.md says to run it: PostgreSQL made from Debian's package,
// the one-off migrate, two receivers, two workers, the console, and the demo profile (the sandbox, its account
// connected, a channel endpoint). Passes once stock reaches the channel endpoint as signed POSTs, every long-running
// service's health check passes, and the console answers through its published port; the demo runs on secrets it
// made itself, every container with a read-only root, no capability and no-new-privileges. And deploy/.env as
// shipped, pointed at another service than the sandbox, starts nothing: each placeholder is refused, named. Run by
// `npm run test:deploy` after test/deploy/image.ts has built the image.
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { freePort } from '../../src/db/embedded.ts';
import { until } from '../support/processes.ts';
import type { Teardown } from '../support/teardown.ts';
import { buildImage, hasPodman, IMAGE, POSTGRES_IMAGE, podman } from './podman.ts';

const deploy = new URL('../../deploy/', import.meta.url).pathname;

/** A compose project of its own in `dir` (deploy/ or a copy), removed whole when the test ends. */
function project(t: Teardown & { comment(msg: string): void }, dir: string, consolePort = 0) {
  const name = `cs-compose-${randomBytes(3).toString('hex')}`;
  const env = { ...process.env, COMMERCE_SYNC_IMAGE: IMAGE, POSTGRES_IMAGE, CONSOLE_PORT: String(consolePort) };
  const compose = (...args: string[]) => podman(['compose', '-p', name, ...args], { cwd: dir, env });
  const label = `label=io.podman.compose.project=${name}`;
  t.teardown(async () => {
    // podman-compose 1.0 leaves the containers' anonymous volumes, the named volumes and the network behind.
    const names = (await podman(['ps', '-a', '-q', '--filter', label])).out.split('\n').filter(Boolean);
    if (names.length) await podman(['rm', '-f', '-v', '-t', '10', ...names]);
    const down = await compose('down', '-v', '-t', '10');
    if (down.code !== 0) t.comment(`compose down: ${down.out.slice(-1000)}`);
    const vols = (await podman(['volume', 'ls', '-q', '--filter', label])).out.split('\n').filter(Boolean);
    for (const v of vols) await podman(['volume', 'rm', '-f', v]);
    await podman(['network', 'rm', '-f', `${name}_default`]);
  });
  const containers = async () =>
    JSON.parse((await podman(['ps', '-a', '--format', 'json', '--filter', label])).out) as {
      Names: string[];
      State: string;
      ExitCode: number;
      Labels: Record<string, string>;
    }[];
  const of = async (service: string) => (await containers()).filter((c) => c.Labels['com.docker.compose.service'] === service);
  const logs = async (service: string) =>
    (await Promise.all((await of(service)).map((c) => podman(['logs', c.Names[0]!])))).map((r) => r.out).join('\n');
  return { name, compose, containers, of, logs };
}

t.test('compose up with the sandbox profile: stock reaches the channel endpoint', async (t) => {
  if (!hasPodman()) {
    t.fail('podman and podman-compose are needed: apt-get install podman podman-compose buildah runc mmdebstrap uidmap');
    return;
  }
  await buildImage((l) => t.comment(l));
  const port = await freePort();
  const { compose, containers, of, logs } = project(t, deploy, port);
  const started = Date.now();
  // podman-compose 1.0 (Debian 12's) knows no profiles and starts every service: there plain `up` is the demo.
  const profiles = (await podman(['compose', '--help'])).out.includes('--profile');
  const up = await compose(...(profiles ? ['--profile', 'sandbox'] : []), 'up', '-d');
  t.equal(up.code, 0, `podman-compose ${profiles ? '--profile sandbox ' : ''}up -d`, { output: up.out.slice(-3000) });
  if (up.code !== 0) return;

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

  // The demo's own secrets, made on its first start into the data volume: none is the placeholder of deploy/.env.
  const [consoleContainer] = await of('console');
  const made = Object.fromEntries(
    (await podman(['exec', consoleContainer!.Names[0]!, 'cat', '/data/demo-secrets/env'])).out
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  t.same(
    Object.keys(made).sort(),
    ['CHANNEL_WEBHOOK_SECRET', 'COMMERCE_CLIENT_SECRET', 'OPERATOR_TOKEN', 'SANDBOX_ADMIN_TOKEN', 'SANDBOX_TOKEN', 'TOKEN_ENCRYPTION_KEY'],
    'the demo made its secrets in the data volume',
  );
  t.match(made.OPERATOR_TOKEN, /^[0-9a-f]{48}$/, 'its operator token: 24 random bytes');
  const metrics = (token: string) => fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  t.equal((await metrics(made.OPERATOR_TOKEN!)).status, 200, "the console takes the demo's operator token");
  t.equal((await metrics('replace-me')).status, 401, 'and not the placeholder');

  // Least privilege: every container (the one-off ones too) on a read-only root, no capability, no-new-privileges.
  for (const c of await containers()) {
    const [ro, capAdd, nnp] = (
      await podman([
        'inspect',
        '--format',
        '{{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapAdd}} {{.HostConfig.SecurityOpt}}',
        c.Names[0]!,
      ])
    ).out.split(' ');
    t.equal(ro, 'true', `${c.Names[0]}: read-only root`);
    t.match(`${capAdd} ${nnp}`, /^\[\] .*no-new-privileges/, `${c.Names[0]}: no capability added, no-new-privileges`);
    if (c.State !== 'running') continue;
    const status = (await podman(['exec', c.Names[0]!, 'cat', '/proc/1/status'])).out;
    t.match(status, /^CapEff:\s+0+$/m, `${c.Names[0]}: its process has no capability`);
    t.match(status, /^NoNewPrivs:\s+1$/m, `${c.Names[0]}: and cannot gain one`);
  }

  // Both receivers answer to the name `receiver` (PUBLIC_URL).
  let stored = 0;
  for (const c of await of('receiver')) {
    const count = await podman([
      'exec',
      c.Names[0]!,
      'node',
      '-e',
      `fetch('http://127.0.0.1:3000/metrics', { headers: { authorization: 'Bearer ${made.OPERATOR_TOKEN}' } }).then((r) => r.text()).then((t) => console.log((t.match(/^commerce_sync_deliveries_received_total\\{[^}]*\\} \\d+/gm) ?? []).map((l) => Number(l.split(' ').pop())).reduce((a, b) => a + b, 0)))`,
    ]);
    // The sandbox keeps its connection to the name alive, so one receiver may take them all: counted, not asserted.
    t.comment(`${c.Names[0]} stored ${count.out.trim()} deliveries`);
    stored += Number(count.out.trim());
  }
  t.ok(stored > 0, 'the sandbox signs its deliveries with the client secret the receivers check theirs with');
});

t.test('deploy/.env as shipped, pointed at another service than the sandbox: nothing starts, each placeholder named', async (t) => {
  if (!hasPodman()) return;
  const dir = mkdtempSync(join(tmpdir(), 'cs-compose-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(deploy, dir, { recursive: true });
  const env = readFileSync(join(dir, '.env'), 'utf8');
  writeFileSync(join(dir, '.env'), env.replace(/^COMMERCE_SERVICE_HOSTS=.*$/m, 'COMMERCE_SERVICE_HOSTS=api.example-commerce.com'));
  const { name, compose, of, logs } = project(t, dir);
  const up = await compose('up', '-d', 'postgres', 'migrate');
  t.equal(up.code, 0, 'podman-compose up -d postgres migrate', { output: up.out.slice(-3000) });
  await until(
    'migrate to exit',
    async () => {
      const [c] = await of('migrate');
      return c?.State === 'exited' ? true : `${c?.State}`;
    },
    60_000,
    1000,
  );
  t.equal((await of('migrate'))[0]?.ExitCode, 2, 'commerce-sync exits 2 (a configuration problem)');
  const refused = await logs('migrate');
  for (const [setting, make] of [
    ['DATABASE_URL', 'openssl rand -hex 24'],
    ['COMMERCE_CLIENT_SECRET', 'the client secret the service issued your application'],
    ['TOKEN_ENCRYPTION_KEY', 'openssl rand -base64 32'],
    ['OPERATOR_TOKEN', 'openssl rand -hex 24'],
    ['CHANNEL_WEBHOOK_SECRET', 'echo whsec_$(openssl rand -base64 32)'],
  ])
    t.ok(
      refused.split('\n').some((l) => l.startsWith(`config: ${setting} holds the placeholder replace-me`) && l.includes(make!)),
      `${setting} is refused, with how to make one: ${make}`,
      { output: refused },
    );
  await until(
    'postgres to refuse its placeholder',
    async () => /POSTGRES_PASSWORD/.test(await logs('postgres')) || (await logs('postgres')),
    60_000,
    1000,
  );
  t.match(await logs('postgres'), /set POSTGRES_PASSWORD, .* \(openssl rand -hex 24\)/, 'PostgreSQL makes no cluster on its placeholder');
  const data = await podman(['run', '--rm', '-v', `${name}_data:/data`, '--entrypoint', 'ls', IMAGE, '-A', '/data']);
  t.notMatch(data.out, /demo-secrets/, 'and no secret was made');
});
