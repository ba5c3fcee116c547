// Commands: `receiver` (the receiver role alone), `deliveries` (stored deliveries and their state),
// `webhooks list|sync` (the connections' subscriptions at the service).
import { formatTable, sharedOptions, UsageError, type CommandContext, type CommandModule } from '../command.ts';
import { connectionByName, listConnections } from '../db/connections.ts';
import { listDeliveries } from '../db/delivery-reads.ts';
import { openDatabase } from '../db/index.ts';
import { ClientState } from '../api/index.ts';
import { baseUrl, listWebhooks, syncWebhooks } from './subscriptions.ts';
import { runRoles } from '../process.ts';
import { cliCaller } from '../audit.ts';
import { idOf } from '../inputs.ts';
import { startBoss, stopBoss } from '../queue/boss.ts';
import { createQueues } from '../queue/queues.ts';
import { deadLetterReplay, deliveryReplay, ReplayError } from './replay.ts';
import * as receiverRole from './role.ts';

export interface DeliveryListing {
  /** The stored row's id: what `replay ID` and the API's replay take. */
  id: number;
  delivery_id: string;
  connection: string;
  event: string | null;
  object_id: number | null;
  state: string;
  received_at: string;
}

function positiveInt(v: unknown, what: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${what} must be a positive integer`);
  return n;
}

async function deliveries(ctx: CommandContext): Promise<number> {
  const limit = ctx.values.limit === undefined ? 50 : positiveInt(ctx.values.limit, '--limit');
  const database = await openDatabase(ctx.config, ctx.log);
  try {
    let connectionId: number | undefined;
    if (typeof ctx.values.connection === 'string') {
      const connection = await connectionByName(database.db, ctx.values.connection);
      if (!connection) {
        ctx.log.error(`no connection named ${ctx.values.connection}`);
        return 1;
      }
      connectionId = connection.id;
    }
    // Newest first, as many as asked (the console's 1000 a page does not apply to the command).
    const rows = await listDeliveries(database.db, { connectionId, limit }, Number.POSITIVE_INFINITY);
    const listing: DeliveryListing[] = rows.map((r) => ({
      id: r.id,
      delivery_id: r.delivery_id,
      connection: r.connection,
      event: r.event,
      object_id: r.object_id,
      state: r.state,
      received_at: new Date(r.received_at as Date).toISOString(),
    }));
    if (ctx.values.json) {
      ctx.out(JSON.stringify(listing, null, 2));
      return 0;
    }
    if (!listing.length) {
      ctx.out('no deliveries stored');
      return 0;
    }
    const table = [
      ['ID', 'RECEIVED', 'CONNECTION', 'EVENT', 'OBJECT', 'STATE', 'DELIVERY'],
      ...listing.map((d, i) => [
        String(d.id),
        d.received_at,
        d.connection,
        d.event ?? '-',
        String(d.object_id ?? '-'),
        d.state + (rows[i]!.error && d.state !== 'queued' ? ` (${rows[i]!.error})` : ''),
        d.delivery_id,
      ]),
    ];
    for (const line of formatTable(table)) ctx.out(line);
    return 0;
  } finally {
    await database.close();
  }
}

async function webhooks(ctx: CommandContext): Promise<number> {
  const [sub, ...extra] = ctx.positionals;
  if (sub !== 'list' && sub !== 'sync') throw new UsageError('say `webhooks list` or `webhooks sync`');
  if (extra.length) throw new UsageError(`unexpected argument ${extra[0]}`);
  const database = await openDatabase(ctx.config, ctx.log);
  try {
    const name = ctx.values.connection;
    const connections =
      typeof name === 'string'
        ? [await connectionByName(database.db, name)].filter((c) => c !== undefined)
        : await listConnections(database.db, 'active', 'name');
    if (!connections.length) {
      ctx.log.error(
        ctx.values.connection ? `no connection named ${ctx.values.connection}` : 'no active connection: run `commerce-sync connect` first',
      );
      return 1;
    }
    const clients = new ClientState();
    const deps = { db: database.db, config: ctx.config, log: ctx.log, clients };
    const publicUrl = typeof ctx.values['public-url'] === 'string' ? ctx.values['public-url'] : undefined;
    let failed = 0;
    const results: unknown[] = [];
    for (const connection of connections) {
      try {
        if (sub === 'sync') {
          // The operator's explicit sync asks refused events again at once (the scheduled check waits a day).
          const r = await syncWebhooks(deps, connection, publicUrl, { retryRefused: true });
          results.push(r);
          if (!ctx.values.json) {
            ctx.out(
              `${connection.name}: ${r.address}: ${r.kept.length} kept, ${r.created.length} created, ${r.removed.length} removed` +
                (r.refused.length ? `, ${r.refused.length} refused by the service (${r.refused.map((x) => x.event).join(', ')})` : ''),
            );
            for (const w of r.created) ctx.out(`  + ${w.event}`);
            for (const w of r.removed) ctx.out(`  - ${w.event} ${w.address}`);
          }
        } else {
          const list = await listWebhooks(deps, connection, publicUrl);
          results.push({ connection: connection.name, webhooks: list });
          if (!ctx.values.json) {
            ctx.out(`${connection.name} (${list.length} subscriptions; ours are under ${baseUrl(ctx.config, publicUrl)}/webhooks/):`);
            for (const w of list)
              ctx.out(`  ${String(w.id).padStart(6)}  ${w.ours ? 'ours ' : 'other'}  ${w.event.padEnd(28)}  ${w.address}`);
          }
        }
      } catch (err) {
        failed++;
        ctx.log.error({ err, connection: connection.name }, `webhooks ${sub} failed for ${connection.name}: ${(err as Error).message}`);
      }
    }
    if (ctx.values.json) ctx.out(JSON.stringify(results, null, 2));
    await clients.settle();
    return failed ? 1 : 0;
  } finally {
    await database.close();
  }
}

/** `replay DELIVERY_ROW_ID` or `replay --dead QUEUE JOB_ID`: what the console's Replay buttons and the API do. */
async function replay(ctx: CommandContext): Promise<number> {
  const dead = typeof ctx.values.dead === 'string' ? ctx.values.dead : undefined;
  const [id, ...extra] = ctx.positionals;
  if (!id || extra.length)
    throw new UsageError(
      dead
        ? "give the dead letter: commerce-sync replay --dead QUEUE JOB_ID (the console's Dead letters page, or GET /api/dead-letters, lists them)"
        : 'give a stored delivery: commerce-sync replay ID (its row id, as `deliveries --json` lists it), or --dead QUEUE JOB_ID',
    );
  const row = dead ? undefined : idOf(id);
  if (!dead && row === undefined) throw new UsageError(`a delivery is replayed by its row id (a number), not "${id}"`);
  const database = await openDatabase(ctx.config, ctx.log);
  const boss = await startBoss(database.url, ctx.log, { supervise: false, schedule: false, max: 2 });
  try {
    await createQueues(boss);
    const deps = { db: database.db, boss };
    let done: Awaited<ReturnType<typeof deliveryReplay>>;
    try {
      done = dead ? await deadLetterReplay(deps, cliCaller(), dead, id) : await deliveryReplay(deps, cliCaller(), row!);
    } catch (err) {
      if (err instanceof ReplayError) throw new UsageError(err.message);
      throw err;
    }
    if (!done) {
      console.error(`commerce-sync replay: ${dead ? `no dead letter ${id} waiting in ${dead}` : `no delivery ${id}`}`);
      return 1;
    }
    ctx.out(dead ? `dead letter ${id} is back on its queue as job ${done.jobId}` : `delivery ${id} is queued again as job ${done.jobId}`);
    return 0;
  } finally {
    await stopBoss(boss);
    await database.close();
  }
}

export const commands: CommandModule['commands'] = {
  receiver: {
    summary: 'Run the webhook receiver alone: POST /webhooks/:connection, /healthz, /readyz.',
    run: (ctx) => runRoles(ctx, { receiver: [receiverRole] }),
  },
  deliveries: {
    summary: 'List stored webhook deliveries, newest first, with their state (queued, processed, unhandled, rejected, failed).',
    options: {
      connection: { multiple: false, type: 'string', short: 'c', value: 'NAME', description: 'only this connection' },
      limit: { multiple: false, type: 'string', short: 'n', value: 'N', description: 'how many (default 50)' },
      json: {
        multiple: false,
        type: 'boolean',
        short: 'j',
        description: 'print a JSON array of {id, delivery_id, connection, event, object_id, state, received_at}',
      },
    },
    run: deliveries,
  },
  replay: {
    summary: "Queue a stored delivery again, or send a dead letter back to its queue (the console's Replay buttons).",
    args: 'ID | --dead QUEUE JOB_ID',
    positionals: true,
    options: {
      dead: {
        multiple: false,
        type: 'string',
        short: 'd',
        value: 'QUEUE',
        description: 'replay a dead letter of this dead-letter queue (e.g. deliveries-dead)',
      },
    },
    run: replay,
  },
  webhooks: {
    summary:
      "List the connections' webhook subscriptions at the service, or sync them: subscribe each connection to " +
      'every event we handle at PUBLIC_URL/webhooks/NAME and remove our stale subscriptions.',
    args: 'list|sync',
    positionals: true,
    options: {
      connection: sharedOptions.connection('only this connection (default: every active one)'),
      'public-url': {
        multiple: false,
        type: 'string',
        short: 'u',
        value: 'URL',
        description: 'the URL the service reaches us at (default PUBLIC_URL, else http://HOST:PORT)',
      },
      json: { multiple: false, type: 'boolean', short: 'j', description: 'print JSON' },
    },
    run: webhooks,
  },
};
