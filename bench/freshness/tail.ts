// Why a move was slow: for each of the slowest moves, what the database says happened to its variant between the
// move and the write that showed it. The deliveries about the variant received after the move (none: the event
// never came, or only a parent's did), the sweep that ran just before the write (then the change waited for it),
// and our last read's stamp on the service's clock.
import { sql } from 'kysely';
import type { Db } from '../../src/db/index.ts';

export interface SlowMove {
  lag: number;
  cause: string;
  key: string;
  at: number;
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export async function explainTail(db: Db, moves: SlowMove[]): Promise<string[]> {
  const out: string[] = [];
  for (const m of moves) {
    const [connectionId, variantId, locationId] = m.key.split(':').map(Number) as [number, number, number];
    const caughtAt = m.at + m.lag;
    const deliveries = (
      await sql<{ event_at: Date | null; received_at: Date; state: string }>`
        SELECT event_at, received_at, state FROM webhook_deliveries
        WHERE connection_id = ${connectionId} AND resource = 'variant' AND object_id = ${variantId}
          AND received_at >= ${new Date(m.at - 1000)} AND received_at <= ${new Date(caughtAt)}
        ORDER BY received_at LIMIT 5`.execute(db)
    ).rows;
    const sweep = (
      await sql<{ action: string; at: Date }>`
        SELECT action, at FROM sync_log WHERE connection_id = ${connectionId} AND action LIKE 'sweep%'
          AND at >= ${new Date(m.at)} AND at <= ${new Date(caughtAt + 2000)} ORDER BY at LIMIT 1`.execute(db)
    ).rows[0];
    const variant = (
      await sql<{
        read_as_of: Date | null;
      }>`SELECT read_as_of FROM variants WHERE connection_id = ${connectionId} AND id = ${variantId}`.execute(db)
    ).rows[0];
    const why = !deliveries.length
      ? "no delivery about the variant after the move (a missing event, or a parent's event whose follow-up was left out)"
      : `deliveries about it received ${deliveries.map((d) => `+${s(d.received_at.getTime() - m.at)} (event +${d.event_at ? s(d.event_at.getTime() - m.at) : '?'}, ${d.state})`).join(', ')}`;
    out.push(
      `${s(m.lag)} ${m.cause} variant ${variantId} location ${locationId} at ${new Date(m.at).toISOString()}: ${why}` +
        `${sweep ? `; ${sweep.action} at +${s(sweep.at.getTime() - m.at)}` : ''}` +
        `; last read_as_of ${variant?.read_as_of ? `+${s(variant.read_as_of.getTime() - m.at)}` : 'none'}`,
    );
  }
  return out;
}
