// Shared setup of the client tests: a sandbox over HTTP, a fresh database, a token connection and its client.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../src/config.ts';
import { addOAuthConnection, addTokenConnection, clientFor } from '../../src/api/connections.ts';
import { requestToken } from '../../src/api/oauth.ts';
import type { ClientDeps, ClientOptions } from '../../src/api/transport.ts';
import type { ApiClient } from '../../src/api/types.ts';
import type { Connection } from '../../src/db/schema.ts';
import { startSandbox, type Sandbox, type SandboxOptions } from '@commerce-sync/sandbox';
import { testConfig } from '../support/config.ts';
import { testDatabase, type TestDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { sandboxAdmin } from '../support/sandbox.ts';
import { ClientState } from '../../src/api/client-state.ts';
import type { Teardown } from '../support/teardown.ts';

export const TEST_KEY = Buffer.alloc(32, 3).toString('base64');

export interface Setup {
  sandbox: Sandbox;
  database: TestDatabase;
  config: Config;
  deps: ClientDeps;
  connection: Connection;
  client: ApiClient;
  logs: ReturnType<typeof captureLogger>;
  admin(method: 'GET' | 'POST', path: string, body?: unknown): Promise<any>;
  stats(): Promise<{
    requests: { total: number; by_status: Record<string, number>; by_route: Record<string, number> };
    rate_limited: number;
  }>;
}

export async function setup(
  t: Teardown,
  opts: { sandbox?: SandboxOptions; config?: Partial<Record<keyof Config, string | number>>; client?: ClientOptions } = {},
): Promise<Setup> {
  const sandbox = await startSandbox({ variants: 50, ...opts.sandbox });
  t.teardown(() => sandbox.close());
  const database = await testDatabase(t);
  const dataDir = await mkdtemp(join(tmpdir(), 'cs-api-'));
  const config = testConfig({ DATA_DIR: dataDir, TOKEN_ENCRYPTION_KEY: TEST_KEY, API_MAX_ATTEMPTS: 4, ...opts.config });
  const logs = captureLogger('debug');
  const deps: ClientDeps = { db: database.db, config, log: logs.log, clients: new ClientState() };
  const connection = await addTokenConnection(deps, { baseUrl: sandbox.url, token: sandbox.token, name: 'shop' });
  const client = await clientFor(deps, connection, { backoffBaseMs: 10, backoffMaxMs: 100, ...opts.client });
  const admin = sandboxAdmin(sandbox);
  return { sandbox, database, config, deps, connection, client, logs, admin, stats: () => admin('GET', 'stats') };
}

export async function collect<T>(it: AsyncIterable<{ records: T[] }>): Promise<T[]> {
  const all: T[] = [];
  for await (const page of it) all.push(...page.records);
  return all;
}

/** An OAuth connection made through the sandbox's authorization code flow (the browser step done by fetch). */
export async function oauthConnection(s: Setup, name = 'oauth-shop') {
  const redirect = 'http://127.0.0.1:9/callback';
  const res = await fetch(`${s.sandbox.url}/oauth/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      client_id: s.sandbox.clientId,
      redirect_uri: redirect,
      response_type: 'code',
      state: 'xyz',
      decision: 'approve',
    }),
  });
  const code = new URL(res.headers.get('location')!).searchParams.get('code')!;
  const config = { ...s.config, COMMERCE_CLIENT_ID: s.sandbox.clientId, COMMERCE_CLIENT_SECRET: s.sandbox.clientSecret };
  const deps = { ...s.deps, config };
  const tokens = await requestToken(config, s.sandbox.url, { grant_type: 'authorization_code', code, redirect_uri: redirect });
  const connection = await addOAuthConnection(deps, { baseUrl: s.sandbox.url, tokens, name });
  return { deps, connection };
}
