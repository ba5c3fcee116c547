// The out-of-the-box demo for `npm start`: with no account connected (or SANDBOX=on) it starts the sandbox
// in-process with a seeded catalog and merchant activity, and connects to it as connection `demo`. The sandbox's
// account is kept in DATA_DIR/demo-sandbox.json, so a restarted demo resumes the account its mirror was made from.
// With COMMERCE_BASE_URL and COMMERCE_TOKEN set, it connects that account instead and runs no sandbox.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { addTokenConnection, getConnection, listConnections } from '../api/connections.ts';
import { updateConnection } from '../db/connections.ts';
import { destinationOf, saveDestination } from '../db/channel-destinations.ts';
import { listChannels } from '../db/channels.ts';
import type { Db } from '../db/index.ts';
import type { Logger } from '../log.ts';
import { DEMO_CHANNEL_PATH, startDemoChannel, type DemoChannel } from './channel-endpoint.ts';
import { startSandbox } from '@commerce-sync/sandbox';
import type { Runtime } from '../runtime.ts';

const DEMO = 'demo';

/** A secret kept in DATA_DIR so the demo's tokens stay the same across restarts. */
async function persistentSecret(dataDir: string, name: string): Promise<string> {
  const file = join(dataDir, name);
  const kept = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  if (kept !== null) return kept.trim();
  await mkdir(dataDir, { recursive: true });
  const value = randomBytes(24).toString('base64url');
  await writeFile(file, `${value}\n`, { mode: 0o600 });
  return value;
}

/**
 * The demo's channel endpoint (channel-endpoint.ts) as CHANNEL_WEBHOOK_URL, unless one is set: on the port it had
 * before when free (the `default` channel's destination keeps its address), with a secret kept in DATA_DIR, and
 * allowed as the sandbox is (that address and port only, in OUTBOUND_ALLOWED_HOSTS).
 */
async function demoChannel(rt: Runtime, log: Logger): Promise<DemoChannel> {
  const { config } = rt;
  const portFile = join(config.DATA_DIR, 'demo-channel-port');
  const keptPort = Number((await readFile(portFile, 'utf8').catch(() => '0')).trim()) || 0;
  const secret = `whsec_${Buffer.from(await persistentSecret(config.DATA_DIR, 'demo-channel-secret'), 'base64url').toString('base64')}`;
  const start = (port: number) => startDemoChannel({ port, secret, log: log.child({ role: 'demo-channel' }) });
  const channel = await start(keptPort).catch((err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? start(0) : Promise.reject(err)));
  const { port } = new URL(channel.url);
  if (Number(port) !== keptPort) await writeFile(portFile, `${port}\n`);
  rt.config = {
    ...config,
    CHANNEL_WEBHOOK_URL: channel.url,
    CHANNEL_WEBHOOK_SECRET: secret,
    OUTBOUND_ALLOWED_HOSTS: [config.OUTBOUND_ALLOWED_HOSTS, `127.0.0.1:${port}`].filter(Boolean).join(','),
  };
  return channel;
}

/** A `default` channel sending to the demo's endpoint at an address of an earlier run is pointed at this one. */
async function followDemoChannel(db: Db, connectionId: number, channel: DemoChannel): Promise<void> {
  const [def] = await listChannels(db, { connectionId, name: 'default' });
  const dest = def && (await destinationOf(db, def.id));
  if (dest && dest.url !== channel.url && new URL(dest.url).pathname === DEMO_CHANNEL_PATH && new URL(dest.url).hostname === '127.0.0.1')
    await saveDestination(db, def.id, { url: channel.url, secrets: dest.secrets, startAfter: 0 });
}

export async function mount(rt: Runtime): Promise<void> {
  const {
    log,
    database: { db },
  } = rt;
  let config = rt.config;
  const deps = { db, config, log, clients: rt.clients };
  if (config.COMMERCE_BASE_URL && config.COMMERCE_TOKEN) {
    const existing = (await listConnections(db)).find((c) => c.base_url === config.COMMERCE_BASE_URL.replace(/\/+$/, ''));
    if (!existing) {
      const conn = await addTokenConnection(deps, { baseUrl: config.COMMERCE_BASE_URL, token: config.COMMERCE_TOKEN });
      log.info({ connection: conn.name, account: conn.account_name }, 'connected the account from COMMERCE_BASE_URL');
    }
    if (config.SANDBOX !== 'on') return;
  }
  const others = (await listConnections(db)).filter((c) => c.name !== DEMO);
  if (config.SANDBOX === 'auto' && others.length > 0) return;

  if (!config.COMMERCE_CLIENT_SECRET) {
    // The demo's sandbox signs deliveries with this; the receiver verifies with the same value.
    config = rt.config = { ...config, COMMERCE_CLIENT_SECRET: await persistentSecret(config.DATA_DIR, 'demo-client-secret') };
  }
  const token = await persistentSecret(config.DATA_DIR, 'demo-sandbox-token');
  const sandbox = await startSandbox({
    port: config.SANDBOX_PORT,
    seed: config.SANDBOX_SEED,
    variants: config.SANDBOX_VARIANTS,
    activity: config.SANDBOX_ACTIVITY,
    profile: config.SANDBOX_PROFILE,
    token,
    clientId: config.COMMERCE_CLIENT_ID,
    clientSecret: config.COMMERCE_CLIENT_SECRET,
    adminToken: await persistentSecret(config.DATA_DIR, 'demo-sandbox-admin-token'),
    // The account outlives a restart, as a real one does: the mirror in the database goes on with the same records.
    stateFile: join(config.DATA_DIR, 'demo-sandbox.json'),
    log: log.child({ role: 'sandbox' }),
  });
  rt.onStop.push(() => sandbox.close());
  const channel = config.CHANNEL_WEBHOOK_URL ? null : await demoChannel(rt, log);
  if (channel) rt.onStop.push(() => channel.close());
  rt.demo = { baseUrl: sandbox.url, channel };

  const existing = await getConnection(db, DEMO);
  if (!existing) {
    await addTokenConnection(deps, { baseUrl: sandbox.url, token, name: DEMO });
  } else {
    // The sandbox listens on a new port each start unless SANDBOX_PORT is set.
    await updateConnection(db, existing.id, { base_url: sandbox.url, status: 'active', status_reason: null });
    if (channel) await followDemoChannel(db, existing.id, channel);
  }
  log.info({ sandbox: sandbox.url, variants: config.SANDBOX_VARIANTS, activity: config.SANDBOX_ACTIVITY }, 'demo sandbox running');
}
