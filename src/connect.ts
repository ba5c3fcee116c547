// The `connect` (privileged token or OAuth), `connections` (list) and `api` (one call through the budget) commands:
// at the top, beside the other commands that drive more than one folder (a connection is made with the API client
// and its webhooks with the receiver's subscriptions).
import { auditCommand } from './audit.ts';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { formatTable, sharedOptions, UsageError, type CommandContext, type CommandModule } from './command.ts';
import { listBudgets } from './db/budgets.ts';
import { withDatabase as withOpenDatabase, type OpenDatabase } from './db/index.ts';
import type { Connection } from './db/schema.ts';
import { ApiError } from './api/errors.ts';
import { addOAuthConnection, addTokenConnection, clientFor, listConnections, serviceHostUrl } from './api/connections.ts';
import { keyFromPath } from './api/http.ts';
import { authorizeUrl, requestToken, type TokenResponse } from './api/oauth.ts';
import type { Method, Priority, QueryValue } from './api/types.ts';
import { syncWebhooks } from './receiver/subscriptions.ts';
import { createQueues } from './queue/queues.ts';
import { createRuntime } from './runtime.ts';
import { resetMirror } from './sync/account.ts';
import { ClientState } from './api/client-state.ts';
import type { ClientDeps } from './api/transport.ts';

type Values = CommandContext['values'];
const str = (v: Values, k: string) => (typeof v[k] === 'string' ? (v[k] as string) : undefined);

/** A one-shot command's database and clients; what its clients hold of the budget goes back before it ends. */
const withDatabase = <T>(ctx: CommandContext, fn: (database: OpenDatabase, deps: ClientDeps) => Promise<T>): Promise<T> =>
  withOpenDatabase(ctx, async (database) => {
    const clients = new ClientState();
    try {
      return await fn(database, { db: database.db, config: ctx.config, log: ctx.log, clients });
    } finally {
      await clients.settle();
    }
  });

/** Registers the connection's webhooks (src/receiver/subscriptions.ts); a failure leaves it to `webhooks sync`. */
async function registerWebhooks(ctx: CommandContext, deps: ClientDeps, connection: Connection): Promise<void> {
  try {
    const r = await syncWebhooks(deps, connection);
    ctx.out(`webhooks at ${r.address}: ${r.created.length} created, ${r.kept.length} kept, ${r.removed.length} removed`);
  } catch (err) {
    ctx.out(`webhooks not registered: ${(err as Error).message} (run commerce-sync webhooks sync later)`);
  }
}

/** Listens on the redirect URI until the browser comes back with `code` (or an error), checking `state`. */
async function awaitAuthorization(
  redirect: URL,
  state: string,
  onListening: (redirectUri: string) => void,
  timeoutMs: number,
): Promise<{ code: string; redirectUri: string }> {
  return new Promise((resolve, reject) => {
    let redirectUri = '';
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', redirectUri);
      if (url.pathname !== redirect.pathname) {
        res.writeHead(404).end();
        return;
      }
      const finish = (status: number, text: string, outcome: () => void) => {
        res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' }).end(text);
        clearTimeout(timer);
        server.close();
        server.closeAllConnections();
        outcome();
      };
      const error = url.searchParams.get('error');
      if (error)
        return finish(400, `Authorization failed: ${error}`, () =>
          reject(new Error(`authorization refused: ${error} ${url.searchParams.get('error_description') ?? ''}`.trim())),
        );
      if (url.searchParams.get('state') !== state) {
        res.writeHead(400).end('state does not match');
        return;
      }
      const code = url.searchParams.get('code');
      if (!code) {
        res.writeHead(400).end('no code');
        return;
      }
      finish(200, 'commerce-sync is authorized. You can close this tab.', () => resolve({ code, redirectUri }));
    });
    const timer = setTimeout(() => {
      server.close();
      reject(new Error(`no authorization within ${Math.round(timeoutMs / 1000)} s`));
    }, timeoutMs);
    server.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    const host = redirect.hostname === 'localhost' ? '127.0.0.1' : redirect.hostname.replace(/^\[|\]$/g, '');
    server.listen(Number(redirect.port || (redirect.protocol === 'https:' ? 443 : 80)), host, () => {
      const u = new URL(redirect.href);
      u.port = String((server.address() as AddressInfo).port);
      redirectUri = u.toString();
      onListening(redirectUri);
    });
  });
}

async function connect(ctx: CommandContext): Promise<number> {
  const { values, config, out } = ctx;
  const base = str(values, 'base-url');
  if (!base) throw new UsageError('--base-url is required');
  let baseUrl: string;
  try {
    // As in the console: the token or the client secret goes only to a configured service host.
    baseUrl = serviceHostUrl(config, base);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const token = str(values, 'token');
  const name = str(values, 'name');
  if (!!token === !!values.oauth) throw new UsageError('give either --token TOKEN or --oauth');
  return withDatabase(ctx, async (_database, deps) => {
    let connection: Connection;
    if (token) {
      connection = await addTokenConnection(deps, { baseUrl, token, name });
    } else {
      if (!config.COMMERCE_CLIENT_ID || !config.COMMERCE_CLIENT_SECRET) {
        throw new UsageError("--oauth needs COMMERCE_CLIENT_ID and COMMERCE_CLIENT_SECRET (the registered application's keys)");
      }
      const redirect = new URL(str(values, 'redirect-uri') ?? 'http://127.0.0.1:0/oauth/callback');
      const state = randomBytes(16).toString('hex');
      const authBase = str(values, 'auth-url') ?? baseUrl;
      const timeoutMs = Number(str(values, 'wait') ?? 600) * 1000;
      const { code, redirectUri } = await awaitAuthorization(
        redirect,
        state,
        (uri) => {
          out('Open this address in a browser and authorize commerce-sync:');
          out(authorizeUrl(authBase, config.COMMERCE_CLIENT_ID, uri, state));
          out(`Waiting for the redirect to ${uri} ...`);
        },
        timeoutMs,
      );
      const tokens: TokenResponse = await requestToken(config, baseUrl, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
      });
      connection = await addOAuthConnection(deps, { baseUrl, tokens, name });
    }
    out(
      `connected ${connection.name}: account ${connection.account_name ?? '?'} (${connection.account_id}) at ${connection.base_url} [${connection.auth_kind}]`,
    );
    await auditCommand(deps.db, {
      action: 'cli connect',
      connection: { id: connection.id, name: connection.name },
      target: connection.base_url,
      after: { name: connection.name, base_url: connection.base_url, account_id: connection.account_id, auth_kind: connection.auth_kind },
    });
    if (!values['skip-webhooks']) await registerWebhooks(ctx, deps, connection);
    return 0;
  });
}

async function resetMirrorCommand(ctx: CommandContext): Promise<number> {
  const [name, ...rest] = ctx.positionals;
  if (!name || rest.length) throw new UsageError('give one connection: commerce-sync reset-mirror NAME (see commerce-sync connections)');
  const rt = await createRuntime(ctx.config, ctx.log, { poolSize: 2, boss: { supervise: false, schedule: false, max: 2 } });
  try {
    await createQueues(rt.boss);
    const deps = rt.workerDeps();
    let reset: Awaited<ReturnType<typeof resetMirror>>;
    try {
      reset = await resetMirror(deps, name);
    } catch (err) {
      if (err instanceof ApiError) throw new UsageError(`${name}: the service did not answer for its account: ${err.message}`);
      throw new UsageError((err as Error).message);
    }
    const { connection, deleted } = reset;
    await auditCommand(deps.db, { action: 'cli reset-mirror', connection, after: { account_id: connection.account_id, deleted } });
    const counts = Object.entries(deleted).map(([table, n]) => `${table} ${n}`);
    ctx.out(`${name}: mirror forgotten (${counts.join(', ') || 'nothing was mirrored'}); account ${connection.account_id} is its own now`);
    ctx.out(`${name}: its first full sweep is queued; a running worker loads the mirror afresh (commerce-sync status shows it)`);
    await registerWebhooks(ctx, deps, connection);
    return 0;
  } finally {
    await rt.stop();
  }
}

async function connections(ctx: CommandContext): Promise<number> {
  return withDatabase(ctx, async (database) => {
    const rows = await listConnections(database.db);
    const budgets = await listBudgets(database.db);
    const byId = new Map(budgets.map((b) => [b.connection_id, b]));
    const listing = rows.map((c) => {
      const b = byId.get(c.id);
      return {
        name: c.name,
        status: c.status,
        status_reason: c.status_reason,
        account_id: c.account_id,
        account_name: c.account_name,
        base_url: c.base_url,
        auth: c.auth_kind,
        token_expires_at: c.token_expires_at ? new Date(c.token_expires_at).toISOString() : null,
        budget: b
          ? {
              remaining: b.remaining,
              limit: b.request_limit,
              in_flight: b.in_flight,
              reset_at: new Date(b.reset_at).toISOString(),
              accounting_errors: b.accounting_errors,
              requests: b.requests_total,
            }
          : null,
      };
    });
    if (ctx.values.json) {
      ctx.out(JSON.stringify(listing, null, 2));
      return 0;
    }
    if (!listing.length) {
      ctx.out('no connections; add one with commerce-sync connect --base-url URL --token TOKEN');
      return 0;
    }
    const table = [
      ['NAME', 'STATUS', 'ACCOUNT', 'BASE URL', 'AUTH', 'BUDGET', '429s'],
      ...listing.map((c) => [
        c.name,
        c.status,
        `${c.account_name ?? '?'} (${c.account_id ?? '?'})`,
        c.base_url,
        c.auth,
        c.budget ? `${c.budget.remaining}/${c.budget.limit}` : '-',
        String(c.budget?.accounting_errors ?? 0),
      ]),
    ];
    for (const line of formatTable(table)) ctx.out(line);
    for (const c of listing) if (c.status !== 'active' && c.status_reason) ctx.out(`${c.name}: ${c.status_reason}`);
    return 0;
  });
}

const methods = new Set(['GET', 'POST', 'PUT', 'DELETE']);

/** `/variants?ids=1,2&status=archived` -> path and query (repeated or name[] keys become lists). */
export function splitPathQuery(input: string): { path: string; query: Record<string, QueryValue> } {
  const at = input.indexOf('?');
  if (at < 0) return { path: input, query: {} };
  const params = new URLSearchParams(input.slice(at + 1));
  const query: Record<string, QueryValue> = {};
  for (const key of new Set(params.keys())) {
    const all = params.getAll(key);
    if (key.endsWith('[]')) query[key.slice(0, -2)] = all;
    else query[key] = all.length > 1 ? all : all[0]!;
  }
  return { path: input.slice(0, at), query };
}

async function api(ctx: CommandContext): Promise<number> {
  const { values, positionals, out } = ctx;
  if (positionals.length < 1 || positionals.length > 2) throw new UsageError('give PATH, or METHOD PATH');
  const data = str(values, 'data');
  const method = (positionals.length === 2 ? positionals[0]!.toUpperCase() : data ? 'POST' : 'GET') as Method;
  if (!methods.has(method)) throw new UsageError(`METHOD must be one of ${[...methods].join(', ')}`);
  const { path, query } = splitPathQuery(positionals[positionals.length - 1]!);
  let body: unknown;
  if (data !== undefined) {
    try {
      body = JSON.parse(data);
    } catch (err) {
      throw new UsageError(`--data is not JSON: ${(err as Error).message}`);
    }
  }
  if (values.paginate && method !== 'GET') throw new UsageError('--paginate works with GET only');
  if (data !== undefined && (method === 'GET' || method === 'DELETE')) throw new UsageError(`--data cannot go with ${method}`);
  const priority = (str(values, 'priority') ?? 'interactive') as Priority;
  if (!['interactive', 'outbound', 'webhook', 'reconcile'].includes(priority))
    throw new UsageError('--priority must be interactive, outbound, webhook or reconcile');
  return withDatabase(ctx, async (database, deps) => {
    let name = str(values, 'connection');
    if (!name) {
      const all = await listConnections(database.db);
      if (all.length !== 1)
        throw new UsageError(
          all.length
            ? `several connections: choose one with --connection (${all.map((c) => c.name).join(', ')})`
            : 'no connections; add one with commerce-sync connect',
        );
      name = all[0]!.name;
    }
    const client = await clientFor(deps, name);
    try {
      if (values.paginate) {
        const key = str(values, 'key') ?? keyFromPath(path);
        const merged: Record<string, unknown[]> = { [key]: [] };
        for await (const page of client.paginate(path, { query, priority, key })) {
          merged[key]!.push(...page.records);
          for (const [k, v] of Object.entries(page.sideloads)) (merged[k] ??= []).push(...v);
        }
        out(JSON.stringify(merged, null, 2));
      } else {
        const res = await client.request(method, path, { query, body, priority });
        out(JSON.stringify(res.body, null, 2));
      }
      return 0;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      process.stderr.write(`commerce-sync api: ${err.message}\n`);
      return 1;
    }
  });
}

export const commands: CommandModule['commands'] = {
  connect: {
    summary:
      'Add (or renew) a connection to a merchant account: with a privileged access token, or through the OAuth ' +
      'authorization code flow. Reads the account with GET /accounts/current and registers webhooks.',
    args: '--base-url URL (--token TOKEN | --oauth)',
    options: {
      'base-url': { multiple: false, type: 'string', short: 'b', value: 'URL', description: "the service's base URL for the account" },
      token: { multiple: false, type: 'string', short: 't', value: 'TOKEN', description: 'privileged access token (does not expire)' },
      oauth: {
        multiple: false,
        type: 'boolean',
        short: 'o',
        description: 'authorize in a browser (COMMERCE_CLIENT_ID / COMMERCE_CLIENT_SECRET)',
      },
      name: { multiple: false, type: 'string', short: 'n', value: 'NAME', description: 'connection name (default: from the account name)' },
      'redirect-uri': {
        multiple: false,
        type: 'string',
        short: 'r',
        value: 'URL',
        description: 'OAuth redirect URI to listen on (default http://127.0.0.1:<free port>/oauth/callback)',
      },
      'auth-url': {
        multiple: false,
        type: 'string',
        short: 'a',
        value: 'URL',
        description: 'where /oauth/authorize lives, when not on the base URL',
      },
      wait: {
        multiple: false,
        type: 'string',
        short: 'w',
        value: 'SECONDS',
        description: 'how long to wait for the browser (default 600)',
      },
      'skip-webhooks': { multiple: false, type: 'boolean', short: 's', description: 'do not register webhook subscriptions' },
    },
    details:
      'Tokens are stored encrypted (AES-256-GCM, TOKEN_ENCRYPTION_KEY or DATA_DIR/secret.key). Connecting an ' +
      'account again (same name, or same base URL and account) replaces its tokens and makes it active again.',
    run: connect,
  },
  connections: {
    summary: 'List connections: status, account, auth kind and rate budget.',
    options: { json: sharedOptions.json() },
    run: connections,
  },
  'reset-mirror': {
    summary:
      "Start a connection's mirror afresh from the account its token reaches now (after `status` says its account " +
      'is not the one its mirror was made from): forgets its records and the orders pushed to that account, keeps its ' +
      'channels and their settings, and queues a first full sweep.',
    args: 'NAME',
    positionals: true,
    run: resetMirrorCommand,
  },
  api: {
    summary: 'Call the service through the rate-budgeted client and print the JSON answer (like gh api).',
    args: '[METHOD] PATH',
    positionals: true,
    options: {
      data: { multiple: false, type: 'string', short: 'd', value: 'JSON', description: 'request body (METHOD defaults to POST with it)' },
      paginate: { multiple: false, type: 'boolean', short: 'p', description: 'follow X-Pagination and print all pages merged' },
      connection: sharedOptions.connection('the connection (needed when there are several)'),
      priority: {
        multiple: false,
        type: 'string',
        short: 'P',
        value: 'PRIORITY',
        description: 'interactive (default), outbound, webhook or reconcile',
      },
      key: {
        multiple: false,
        type: 'string',
        short: 'k',
        value: 'KEY',
        description: "with --paginate: the records' key (default from the path)",
      },
    },
    details:
      'Examples:\n  commerce-sync api /accounts/current\n  commerce-sync api /variants?ids=1,2,3\n' +
      '  commerce-sync api --paginate /variants\n  commerce-sync api POST /currencies --data \'{"currency":{"iso":"EUR"}}\'',
    run: api,
  },
};
