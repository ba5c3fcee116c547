// commerce-sync worker | reconcile [--full] [--connection NAME] | stock [--connection NAME] [--sku SKU] [--json]
import { sql } from 'kysely';
import { clientFor, listConnections } from '../api/index.ts';
import { formatTable, UsageError, type CommandModule } from '../command.ts';
import { openDatabase, type Db } from '../db/index.ts';
import { startBoss, stopBoss } from '../queue/boss.ts';
import { createQueues } from '../queue/names.ts';
import { runRoles } from '../start.ts';
import { dec, fmt, withAvailable } from '../stock/rules.ts';
import { runSweep } from './reconcile.ts';

export interface StockRow {
  connection: string;
  variant_id: number;
  sku: string | null;
  status: string | null;
  locations: { location_id: number; on_hand: string; committed: string; incoming: string; available: string }[];
  /** Decimal string; null when the variant's stock is not tracked (or not computed yet). */
  channel_quantity: string | null;
  backorderable: boolean;
}

/** Mirrored stock per variant and location with the channel quantity, ordered by connection and SKU. */
export async function stockReport(db: Db, opts: { connection?: string | null; sku?: string | null; limit?: number }): Promise<StockRow[]> {
  const rows = await sql<{ connection: string; variant_id: number; sku: string | null; status: string | null; channel_quantity: string | null; backorderable: boolean | null; keep_selling: boolean }>`
    SELECT n.name AS connection, v.id AS variant_id, v.sku, v.status, q.quantity::text AS channel_quantity, q.backorderable, v.keep_selling
    FROM variants v JOIN connections n ON n.id = v.connection_id
    LEFT JOIN channel_quantities q ON q.connection_id = v.connection_id AND q.variant_id = v.id
    WHERE true ${opts.connection ? sql`AND n.name = ${opts.connection}` : sql``} ${opts.sku ? sql`AND v.sku = ${opts.sku}` : sql``}
    ORDER BY n.name, v.sku NULLS LAST, v.id ${opts.limit ? sql`LIMIT ${opts.limit}` : sql``}`.execute(db);
  if (!rows.rows.length) return [];
  const levels = await sql<{ connection_id: number; variant_id: number; location_id: number; on_hand: string; committed: string; incoming: string; name: string }>`
    SELECT s.variant_id, s.location_id, s.on_hand::text, s.committed::text, s.incoming::text, n.name
    FROM stock_levels s JOIN connections n ON n.id = s.connection_id
    WHERE s.variant_id = ANY(${rows.rows.map((r) => r.variant_id)}::bigint[]) ORDER BY s.location_id`.execute(db);
  const byKey = new Map<string, StockRow['locations']>();
  for (const l of levels.rows) {
    const k = `${l.name}/${l.variant_id}`;
    const list = byKey.get(k) ?? [];
    list.push(withAvailable({ ...l, location_id: Number(l.location_id) }));
    byKey.set(k, list);
  }
  return rows.rows.map((r) => ({
    connection: r.connection, variant_id: Number(r.variant_id), sku: r.sku, status: r.status,
    locations: byKey.get(`${r.connection}/${r.variant_id}`) ?? [],
    channel_quantity: r.channel_quantity === null ? null : fmt(dec(r.channel_quantity)),
    backorderable: r.backorderable ?? r.keep_selling,
  }));
}

function table(rows: StockRow[]): string[] {
  const lines: string[][] = [['CONNECTION', 'VARIANT', 'SKU', 'STATUS', 'LOCATION', 'ON HAND', 'COMMITTED', 'INCOMING', 'AVAILABLE', 'CHANNEL']];
  for (const r of rows) {
    const channel = r.channel_quantity ?? 'untracked';
    const head = [r.connection, String(r.variant_id), r.sku ?? '-', r.status ?? '-'];
    if (!r.locations.length) lines.push([...head, '-', '-', '-', '-', '-', channel + (r.backorderable ? ' (backorder)' : '')]);
    r.locations.forEach((l, i) => lines.push([...(i ? ['', '', '', ''] : head), String(l.location_id), l.on_hand, l.committed, l.incoming, l.available,
      i ? '' : channel + (r.backorderable ? ' (backorder)' : '')]));
  }
  return formatTable(lines);
}

export const commands: CommandModule['commands'] = {
  worker: {
    summary: 'Run the sync workers alone (deliveries, fetch drains, sweeps, maintenance); several processes share the work. ' +
      'Serves /healthz, /readyz and /metrics on WORKER_PORT when it is set.',
    run: (ctx) => runRoles(ctx, ['worker']),
  },
  reconcile: {
    summary: 'Run a reconciliation sweep now: incremental (by updated_at from the last cursor) or --full.',
    options: {
      full: { multiple: false, type: 'boolean', short: 'f', description: 'full sweep: every record, active and archived; repairs and counts drift' },
      connection: { multiple: false, type: 'string', short: 'c', value: 'NAME', description: 'only this connection (default: every active one)' },
    },
    details: 'Waits for a sweep of the same connection that is already running. Prints drift per resource.',
    async run(ctx) {
      const { config, log } = ctx;
      const database = await openDatabase(config, log);
      const boss = await startBoss(database.url, log, { supervise: false, schedule: false, max: 2 });
      try {
        await createQueues(boss);
        const all = await listConnections(database.db);
        const name = ctx.values.connection as string | undefined;
        const targets = name ? all.filter((c) => c.name === name) : all.filter((c) => c.status === 'active');
        if (name && !targets.length) throw new UsageError(`no connection named ${JSON.stringify(name)}; see commerce-sync connections`);
        if (!targets.length) { ctx.out('no active connection to reconcile; add one with commerce-sync connect'); return 1; }
        for (const c of targets) {
          const client = await clientFor({ db: database.db, config, log }, c);
          const r = await runSweep({ db: database.db, boss, config, log }, client, { full: ctx.values.full === true, wait: true, jobId: 'cli' });
          ctx.out(`${c.name}: ${r.full ? 'full' : 'incremental'} sweep read ${r.records} records in ${(r.durationMs / 1000).toFixed(1)} s; ` +
            `${r.initial ? 'initial load of the mirror' : `drift ${r.drift}`}; channel quantity changes ${r.channelChanges}`);
          const wrote = r.initial ? 'loaded' : 'repaired';
          for (const [res, s] of Object.entries(r.resources)) {
            if (s.records || s.applied || s.gone) ctx.out(`  ${res.padEnd(22)} records ${s.records}  ${wrote} ${s.applied}  gone ${s.gone}`);
          }
          if (r.unavailable.length) ctx.out(`  not offered by the service: ${r.unavailable.join(', ')}`);
        }
        return 0;
      } finally {
        await stopBoss(boss);
        await database.close();
      }
    },
  },
  stock: {
    summary: 'Print mirrored stock per location (on hand, committed, incoming, available) and the channel quantity.',
    options: {
      connection: { multiple: false, type: 'string', short: 'c', value: 'NAME', description: 'only this connection' },
      sku: { multiple: false, type: 'string', short: 's', value: 'SKU', description: 'only this SKU' },
      json: { multiple: false, type: 'boolean', short: 'j', description: 'JSON array of {variant_id, sku, status, locations, channel_quantity}; quantities as decimal strings' },
    },
    async run(ctx) {
      const database = await openDatabase(ctx.config, ctx.log);
      try {
        const rows = await stockReport(database.db, { connection: ctx.values.connection as string | undefined, sku: ctx.values.sku as string | undefined });
        if (ctx.values.json) ctx.out(JSON.stringify(rows, null, 2));
        else if (!rows.length) ctx.out('no mirrored variants match');
        else for (const l of table(rows)) ctx.out(l);
        return ctx.values.sku && !rows.length ? 1 : 0;
      } finally {
        await database.close();
      }
    },
  },
};
