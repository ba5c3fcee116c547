// Readiness that tells the truth: a receiver, a worker and a console under delivery load while PostgreSQL is
// killed with SIGKILL (its postmaster, every connection gone) and restarted. Each role's /readyz answers 503
// with a reason while the database is down and 200 again once it is back, with no restart of the roles;
// /healthz answers 200 throughout; nothing acknowledged is lost.
import t from 'tap';
import { ownPostgres } from '../support/embedded.ts';
import { captureLogger } from '../support/log.ts';
import type { CliProcess } from '../support/processes.ts';
import { ackedProcessed, drainSandbox, startWorld, steadyLoad, until } from '../reliability/harness.ts';

const { log } = captureLogger('warn');

/** Status and body of GET url, or the network error (a role that stopped answering at all). */
async function probe(url: string): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    return { status: res.status, body: await res.text() };
  } catch (err) {
    return { status: 0, body: (err as Error).message };
  }
}

/** Polls every role's /readyz until each answers `status`; checks /healthz on each poll. */
async function readyzEverywhere(
  t: { equal(a: unknown, b: unknown, msg: string): unknown },
  roles: CliProcess[],
  status: number,
  within: number,
): Promise<Map<string, string>> {
  const bodies = new Map<string, string>();
  let unhealthy = '';
  await until(
    `/readyz ${status} on every role`,
    async () => {
      const seen = await Promise.all(roles.map(async (p) => [p, await probe(`${p.url}/readyz`), await probe(`${p.url}/healthz`)] as const));
      for (const [p, , health] of seen) if (health.status !== 200) unhealthy ||= `${p.name}: /healthz ${health.status} ${health.body}`;
      for (const [p, ready] of seen) if (ready.status === status) bodies.set(p.name, ready.body);
      const waiting = seen.filter(([, ready]) => ready.status !== status);
      return waiting.length ? waiting.map(([p, r]) => `${p.name} ${r.status}`).join(', ') : true;
    },
    within,
    100,
  );
  t.equal(unhealthy, '', `/healthz answered 200 on every role on every poll while /readyz went to ${status}`);
  return bodies;
}

t.test(
  'kill -9 of PostgreSQL under load: /readyz 503 while it is down, 200 when back; /healthz 200; nothing acknowledged lost',
  async (t) => {
    // The roles reach PostgreSQL at one fixed address, as they would a managed database that restarts.
    const pg = await ownPostgres(t, log, 'readiness', { retry: { attempts: 40, delayMs: 250 }, proxied: true });
    const { url, db } = pg;

    const world = await startWorld(t, { database: { url, db } });
    const [shop] = world.shops;
    const receiver = await world.spawn('receiver');
    world.setReceivers([receiver]);
    const roles = [receiver, await world.spawn('worker'), await world.spawn('start', { ROLES: 'console' })];
    await readyzEverywhere(t, roles, 200, 20_000);

    const stopLoad = steadyLoad(t, shop!, 10);
    const ackedAtLeast = (n: number, what: string) =>
      until(what, () => world.proxy.acked.size >= n || `${world.proxy.acked.size} acknowledged`, 30_000);
    await ackedAtLeast(20, 'deliveries flowing');

    pg.kill();
    const down = await readyzEverywhere(t, roles, 503, 20_000);
    for (const [name, body] of down) t.match(body, /database unreachable/, `${name}: /readyz says why: ${body}`);

    await pg.restart();
    await readyzEverywhere(t, roles, 200, 30_000);
    t.pass('every role ready again without a restart');
    for (const p of roles) t.equal(p.child.exitCode, null, `${p.name} ${p.pid} is the same process throughout`);

    await ackedAtLeast(world.proxy.acked.size + 20, 'deliveries acknowledged after the restart');
    await stopLoad();
    await drainSandbox(shop!);
    await ackedProcessed(db, world.proxy.acked, { everyMs: 300 });
    t.pass(
      `${world.proxy.acked.size} deliveries acknowledged, all stored and processed; answers seen: ${JSON.stringify(Object.fromEntries(world.proxy.statuses))}`,
    );
    for (const p of roles) await p.stop();
  },
);
