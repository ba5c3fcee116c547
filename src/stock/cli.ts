// commerce-sync stock [--connection NAME] [--sku SKU] [--json]: mirrored stock per location and each channel's
// quantity. The `channels` command: src/channels/cli.ts.
import { formatTable, sharedOptions, type CommandModule } from '../command.ts';
import { channelStockReport } from '../db/channels.ts';
import { openDatabase, type Db } from '../db/index.ts';
import { stockLevelsByConnection } from '../db/mirror-reads.ts';
import { dec, fmt, withAvailable } from './rules.ts';

export interface StockRow {
  connection: string;
  variant_id: number;
  sku: string | null;
  status: string | null;
  locations: { location_id: number; on_hand: string; committed: string; incoming: string; available: string }[];
  /** The default channel's quantity (or the first channel's): a decimal string; null when not tracked (or not computed yet). */
  channel_quantity: string | null;
  backorderable: boolean;
  /** Each channel's quantity; listed false: the channel does not list the variant. */
  channels: { channel: string; quantity: string | null; backorderable: boolean; listed: boolean }[];
}

/** Mirrored stock per variant and location with the channel quantity, ordered by connection and SKU. */
export async function stockReport(db: Db, opts: { connection?: string | null; sku?: string | null; limit?: number }): Promise<StockRow[]> {
  const rows = await channelStockReport(db, opts);
  if (!rows.length) return [];
  const levels = await stockLevelsByConnection(
    db,
    rows.map((r) => r.variant_id),
  );
  const byKey = new Map<string, StockRow['locations']>();
  for (const l of levels) {
    const k = `${l.name}/${l.variant_id}`;
    const list = byKey.get(k) ?? [];
    list.push(withAvailable(l));
    byKey.set(k, list);
  }
  return rows.map((r) => {
    const channels = (r.channels ?? []).map((c) => ({ ...c, quantity: c.quantity === null ? null : fmt(dec(c.quantity)) }));
    const main = channels.find((c) => c.channel === 'default') ?? channels[0];
    return {
      connection: r.connection,
      variant_id: r.variant_id,
      sku: r.sku,
      status: r.status,
      locations: byKey.get(`${r.connection}/${r.variant_id}`) ?? [],
      channel_quantity: main?.quantity ?? null,
      backorderable: main?.backorderable ?? r.keep_selling,
      channels,
    };
  });
}

const shown = (c: StockRow['channels'][number]) =>
  !c.listed ? 'not listed' : (c.quantity ?? 'untracked') + (c.backorderable ? ' (backorder)' : '');

function table(rows: StockRow[]): string[] {
  const lines: string[][] = [
    ['CONNECTION', 'VARIANT', 'SKU', 'STATUS', 'LOCATION', 'ON HAND', 'COMMITTED', 'INCOMING', 'AVAILABLE', 'CHANNELS'],
  ];
  for (const r of rows) {
    const channel = r.channels.length ? r.channels.map((c) => `${c.channel}=${shown(c)}`).join(' ') : '-';
    const head = [r.connection, String(r.variant_id), r.sku ?? '-', r.status ?? '-'];
    if (!r.locations.length) lines.push([...head, '-', '-', '-', '-', '-', channel]);
    r.locations.forEach((l, i) =>
      lines.push([
        ...(i ? ['', '', '', ''] : head),
        String(l.location_id),
        l.on_hand,
        l.committed,
        l.incoming,
        l.available,
        i ? '' : channel,
      ]),
    );
  }
  return formatTable(lines);
}

export const commands: CommandModule['commands'] = {
  stock: {
    summary: "Print mirrored stock per location (on hand, committed, incoming, available) and each channel's quantity.",
    options: {
      connection: sharedOptions.connection(),
      sku: { multiple: false, type: 'string', short: 's', value: 'SKU', description: 'only this SKU' },
      json: sharedOptions.json(
        'JSON array of {variant_id, sku, status, locations, channel_quantity (the default channel), channels}; quantities as decimal strings',
      ),
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
