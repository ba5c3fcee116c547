// README's "Scaling out" block, run as written: its lines are read out of README.md itself (so the two cannot
// drift apart) and started as real processes against one PostgreSQL, the harness's. Deliveries reach both
// receivers through a load balancer (the recording proxy at PUBLIC_URL), the workers process them, the
// console shows them, and every process answers /readyz. README's ports are checked to be distinct, then
// each is mapped to a free one here, so a developer's running `npm start` cannot break the test.
import t from 'tap';
import { sql } from 'kysely';
import { readFileSync } from 'node:fs';
import { freePort } from '../../src/db/embedded.ts';
import { spawnCli, type CliProcess } from '../support/processes.ts';
import { ackedProcessed, drainSandbox, startWorld } from '../reliability/harness.ts';
import { ackedDigests } from '../support/delivery-proxy.ts';

const OPERATOR = 'scaleout-operator-token-0123';

interface Line {
  text: string;
  env: Record<string, string>;
  args: string[];
}

/** The commands of README's scale-out block: `export X=Y` lines and `X=Y ... npx commerce-sync ARGS` lines. */
export function scaleOutBlock(readme: string): { exports: Record<string, string>; lines: Line[] } {
  const section = readme.slice(readme.indexOf('## Scaling out'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('README has no sh block under "## Scaling out"');
  const exports: Record<string, string> = {};
  const lines: Line[] = [];
  for (const raw of block.split('\n')) {
    const text = raw.replace(/\s+#.*$/, '').trim();
    if (!text || text.startsWith('#')) continue;
    const exported = /^export ([A-Z_]+)=(\S+)$/.exec(text);
    if (exported) {
      exports[exported[1]!] = exported[2]!;
      continue;
    }
    const m = /^((?:[A-Z_]+=\S+\s+)*)npx commerce-sync\s+(.+)$/.exec(text);
    if (!m) throw new Error(`README scale-out line is neither an export nor a commerce-sync command: ${text}`);
    const env = Object.fromEntries(
      m[1]!
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map((a) => a.split('=', 2) as [string, string]),
    );
    lines.push({ text, env, args: m[2]!.split(/\s+/) });
  }
  return { exports, lines };
}

const { exports, lines } = scaleOutBlock(readFileSync(new URL('../../README.md', import.meta.url), 'utf8'));
const defaults = JSON.parse(readFileSync(new URL('../../config/default.json', import.meta.url), 'utf8')) as Record<string, unknown>;

t.test('README scale-out block: two receivers, two workers and a console, each on a port of its own', async (t) => {
  t.ok(exports.DATABASE_URL, 'the block sets DATABASE_URL');
  const roles = lines.map((l) => (l.args[0] === 'start' ? (l.env.ROLES ?? defaults.ROLES) : l.args[0]));
  t.same(roles.slice().sort(), ['console', 'receiver', 'receiver', 'worker', 'worker'], 'two receivers, two workers, one console');
  // The port each process serves on, as the code decides it (a worker-only process: WORKER_PORT).
  const ports = lines.map((l, i) => (roles[i] === 'worker' ? (l.env.WORKER_PORT ?? defaults.WORKER_PORT) : (l.env.PORT ?? defaults.PORT)));
  t.ok(
    ports.every((p) => p !== '' && p !== undefined && Number(p) > 0),
    `every process names a fixed port (${ports.join(', ')})`,
  );
  t.equal(new Set(ports.map(String)).size, ports.length, 'no two processes share a port');
});

t.test('README scale-out block, pasted: five processes on one PostgreSQL process deliveries end to end', async (t) => {
  const world = await startWorld(t);
  const [shop] = world.shops;
  // The environment "Connecting a real account" exports, with this test's database, secret, key and load balancer.
  const base = world.env({ OPERATOR_TOKEN: OPERATOR, LOG_LEVEL: 'warn' }) as Record<string, string | number>;
  delete base.SANDBOX;
  delete base.PORT;
  delete base.WORKER_PORT;
  const portMap = new Map<string, number>();
  const mapped = async (p: string) => {
    if (!portMap.has(p)) portMap.set(p, await freePort());
    return portMap.get(p)!;
  };
  const procs: CliProcess[] = [];
  for (const line of lines) {
    const env: Record<string, string | number> = { ...base, ...exports, ...line.env, DATABASE_URL: world.databaseUrl };
    for (const k of ['PORT', 'WORKER_PORT']) if (line.env[k]) env[k] = await mapped(line.env[k]!);
    procs.push(await spawnCli(t, line.text, line.args, env));
  }
  const byRole = (role: string) => procs.filter((_, i) => lines[i]!.args[0] === role);
  const [receivers, workers, consoles] = [byRole('receiver'), byRole('worker'), byRole('start')];
  for (const p of procs) t.match(p.url, /^http:\/\/127\.0\.0\.1:\d+$/, `${p.name}: first line says where it listens (${p.url})`);
  world.setReceivers(receivers);
  // Both receivers subscribe the connection at start, at the same PUBLIC_URL: one subscription per event.
  const hooks = (await shop!.snapshot('webhooks')).map((w) => `${w.event} ${w.address}`);
  t.ok(hooks.length > 0, `${hooks.length} webhook subscriptions at the service`);
  t.same(
    hooks.filter((h, i) => hooks.indexOf(h) !== i),
    [],
    'no subscription made twice by the two receivers',
  );

  // Merchant activity at the service: its webhooks go round-robin to both receivers.
  await shop!.admin('POST', 'activity', { operations: 40 });
  await drainSandbox(shop!);
  const acked = world.proxy.acked;
  t.ok(acked.size >= 20, `${acked.size} deliveries acknowledged`);
  await ackedProcessed(world.db, acked, { what: 'every acknowledged delivery processed by the workers', everyMs: 300 });
  t.pass(`all ${acked.size} acknowledged deliveries processed`);

  const auth = { authorization: `Bearer ${OPERATOR}` };
  for (const r of receivers) {
    const text = await (await fetch(`${r.url}/metrics`, { headers: auth })).text();
    const received = [...text.matchAll(/^commerce_sync_deliveries_received_total\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    t.ok(received > 0, `${r.name} (${r.url}) stored ${received} deliveries`);
  }
  const shown = (await (await fetch(`${consoles[0]!.url}/api/deliveries?limit=1000`, { headers: auth })).json()) as {
    deliveries: { delivery_id: string; state: string }[];
  };
  const states = new Map(shown.deliveries.map((d) => [d.delivery_id, d.state]));
  // A delivery acknowledged as a copy of a stored body (a resend under another id) has no row of its own.
  const digests = ackedDigests(acked);
  const bodies = new Set(
    (await sql<{ digest: string }>`SELECT encode(body_sha256, 'hex') AS digest FROM webhook_deliveries`.execute(world.db)).rows.map(
      (r) => r.digest,
    ),
  );
  const missing = [...acked].filter(
    (id) =>
      !['processed', 'unhandled'].includes(states.get(id) ?? '') && !(states.get(id) === undefined && bodies.has(digests.get(id) ?? '')),
  );
  t.same(missing, [], `the console shows every acknowledged delivery as processed (${states.size} listed)`);

  for (const p of procs) {
    const res = await fetch(`${p.url}/readyz`);
    t.equal(res.status, 200, `${p.name}: /readyz ${res.status} ${await res.text()}`);
  }
  for (const p of [...receivers, ...workers, ...consoles]) t.equal(p.child.exitCode, null, `${p.name} still running`);
  t.notMatch(procs.map((p) => p.output()).join('\n'), /demo sandbox running/, 'no process started the demo sandbox');
  t.same(
    await Promise.all(procs.map((p) => p.stop())),
    procs.map(() => 0),
    'every process stops cleanly on SIGTERM',
  );
});
