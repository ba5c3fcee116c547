// commerce-sync stock [--connection NAME] [--sku SKU] [--json]: mirrored stock per location and the channel quantity.
import { sql } from 'kysely';
import { formatTable, type CommandModule } from '../command.ts';
import { openDatabase, type Db } from '../db/index.ts';
import { dec, fmt, withAvailable } from './rules.ts';

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
  const rows = await sql<{
    connection: string;
    variant_id: number;
    sku: string | null;
    status: string | null;
    channel_quantity: string | null;
    backorderable: boolean | null;
    keep_selling: boolean;
  }>`
    SELECT n.name AS connection, v.id AS variant_id, v.sku, v.status, q.quantity::text AS channel_quantity, q.backorderable, v.keep_selling
    FROM variants v JOIN connections n ON n.id = v.connection_id
    LEFT JOIN channel_quantities q ON q.connection_id = v.connection_id AND q.variant_id = v.id
    WHERE true ${opts.connection ? sql`AND n.name = ${opts.connection}` : sql``} ${opts.sku ? sql`AND v.sku = ${opts.sku}` : sql``}
    ORDER BY n.name, v.sku NULLS LAST, v.id ${opts.limit ? sql`LIMIT ${opts.limit}` : sql``}`.execute(db);
  if (!rows.rows.length) return [];
  const levels = await sql<{
    connection_id: number;
    variant_id: number;
    location_id: number;
    on_hand: string;
    committed: string;
    incoming: string;
    name: string;
  }>`
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
    connection: r.connection,
    variant_id: Number(r.variant_id),
    sku: r.sku,
    status: r.status,
    locations: byKey.get(`${r.connection}/${r.variant_id}`) ?? [],
    channel_quantity: r.channel_quantity === null ? null : fmt(dec(r.channel_quantity)),
    backorderable: r.backorderable ?? r.keep_selling,
  }));
}

function table(rows: StockRow[]): string[] {
  const lines: string[][] = [
    ['CONNECTION', 'VARIANT', 'SKU', 'STATUS', 'LOCATION', 'ON HAND', 'COMMITTED', 'INCOMING', 'AVAILABLE', 'CHANNEL'],
  ];
  for (const r of rows) {
    const channel = r.channel_quantity ?? 'untracked';
    const head = [r.connection, String(r.variant_id), r.sku ?? '-', r.status ?? '-'];
    if (!r.locations.length) lines.push([...head, '-', '-', '-', '-', '-', channel + (r.backorderable ? ' (backorder)' : '')]);
    r.locations.forEach((l, i) =>
      lines.push([
        ...(i ? ['', '', '', ''] : head),
        String(l.location_id),
        l.on_hand,
        l.committed,
        l.incoming,
        l.available,
        i ? '' : channel + (r.backorderable ? ' (backorder)' : ''),
      ]),
    );
  }
  return formatTable(lines);
}

export const commands: CommandModule['commands'] = {
  stock: {
    summary: 'Print mirrored stock per location (on hand, committed, incoming, available) and the channel quantity.',
    options: {
      connection: { multiple: false, type: 'string', short: 'c', value: 'NAME', description: 'only this connection' },
      sku: { multiple: false, type: 'string', short: 's', value: 'SKU', description: 'only this SKU' },
      json: {
        multiple: false,
        type: 'boolean',
        short: 'j',
        description: 'JSON array of {variant_id, sku, status, locations, channel_quantity}; quantities as decimal strings',
      },
    },
    async run(ctx) {
      const database = await openDatabase(ctx.config, ctx.log);
      try {
        const rows = await stockReport(database.db, {
          connection: ctx.values.connection as string | undefined,
          sku: ctx.values.sku as string | undefined,
        });
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
