// The out-of-the-box demo for `npm start`: with no account connected (or SANDBOX=on) it starts the sandbox
// in-process with a seeded catalog and merchant activity, and connects to it as connection `demo`. The sandbox's
// account is kept in DATA_DIR/demo-sandbox.json, so a restarted demo resumes the account its mirror was made from.
// With COMMERCE_BASE_URL and COMMERCE_TOKEN set, it connects that account instead and runs no sandbox.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { addTokenConnection, getConnection, listConnections } from '../api/connections.ts';
import { updateConnection } from '../db/connections.ts';
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
  rt.demo = { baseUrl: sandbox.url };

  const existing = await getConnection(db, DEMO);
  if (!existing) {
    await addTokenConnection(deps, { baseUrl: sandbox.url, token, name: DEMO });
  } else {
    // The sandbox listens on a new port each start unless SANDBOX_PORT is set.
    await updateConnection(db, existing.id, { base_url: sandbox.url, status: 'active', status_reason: null });
  }
  log.info({ sandbox: sandbox.url, variants: config.SANDBOX_VARIANTS, activity: config.SANDBOX_ACTIVITY }, 'demo sandbox running');
}
