// Shared by the channel tests: a mirrored variant written the way the sync engine writes one (the upsert, then
// the recomputation in the same transaction), a look at every channel's quantity of it, and the channels command.
import { parseArgs } from 'node:util';
import { catalog } from '../../src/catalog/index.ts';
import { UsageError } from '../../src/command.ts';
import type { Db } from '../../src/db/index.ts';
import { upsertRecords } from '../../src/db/mirror.ts';
import { quantitiesOf } from '../../src/db/channels.ts';
import { recomputeChannel, type Cause } from '../../src/stock/recompute.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import { commands } from '../../src/channels/cli.ts';
import { testConfig } from '../support/config.ts';
import { captureLogger } from '../support/log.ts';

export const settings = {
  CHANNEL_LOCATIONS: '',
  CHANNEL_SAFETY_BUFFER: '0',
  CHANNEL_HOLD_MINUTES: 60,
  SERVICE_CLOCK_MARGIN_SECONDS: 2,
};

let stamp = Date.parse('2026-03-01T09:00:00Z');

/** A variant record as the service answers it; each call a second later than the last. */
export function variant(id: number, levels: Record<number, [string, string?]>, extra: Record<string, unknown> = {}) {
  stamp += 1000;
  return {
    id,
    sku: `SKU-${id}`,
    status: 'active',
    updated_at: new Date(stamp).toISOString(),
    composite: false,
    manage_stock: true,
    keep_selling: false,
    max_online: null,
    locations: Object.entries(levels).map(([loc, [onHand, committed]]) => ({
      location_id: Number(loc),
      stock_on_hand: onHand,
      committed: committed ?? '0',
      incoming: null,
    })),
    ...extra,
  };
}

/** Writes records to the mirror and recomputes, in one transaction, as a drain does. */
export async function mirror(db: Db, connectionId: number, records: any[], cause: Partial<Cause> = {}) {
  return db.transaction().execute(async (tx) => {
    const r = await upsertRecords(tx, catalog.variant!, connectionId, records);
    return recomputeChannel(tx, rulesFrom(settings), connectionId, r.applied, { kind: 'sweep', ...cause });
  });
}

/** Channel name -> quantity of a variant. */
export async function quantities(db: Db, connectionId: number, variantId: number): Promise<Record<string, string | null>> {
  return Object.fromEntries((await quantitiesOf(db, connectionId, variantId)).map((q) => [q.channel, q.quantity]));
}

/**
 * `commerce-sync channels` as src/cli.ts runs it (its options through parseArgs, a UsageError exiting 2), against
 * the database at `url`: each call gives the exit code, what it printed and its errors.
 */
export function channelsCommand(url: string) {
  const spec = commands.channels!;
  return async (...args: string[]) => {
    const out: string[] = [];
    const errors: string[] = [];
    const error = console.error;
    console.error = (line: string) => errors.push(line);
    try {
      const parsed = parseArgs({
        args,
        options: Object.fromEntries(
          Object.entries(spec.options ?? {}).map(([k, o]) => [
            k,
            { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
          ]),
        ),
        allowPositionals: true,
        strict: true,
      });
      const code = await spec.run({
        name: 'channels',
        values: parsed.values as never,
        positionals: parsed.positionals,
        config: testConfig({ DATABASE_URL: url }),
        log: captureLogger('silent').log,
        out: (l) => out.push(l),
      });
      return { code: code ?? 0, out: out.join('\n'), err: errors.join('\n') };
    } catch (err) {
      if (err instanceof UsageError) return { code: 2, out: out.join('\n'), err: err.message };
      throw err;
    } finally {
      console.error = error;
    }
  };
}
