// Stock lag, measured from the outside: the sandbox lists every stock move it made (variant, location, when, and
// the quantities after it: GET /__sandbox/stock_moves); the mirror's stock_levels row of that variant and
// location says what we show and when it was written (synced_at, in the same transaction that recomputes the
// channel quantity). A move is caught up when the mirror shows the quantities after it or after a later move;
// its lag is the time from the move to the write of that row.
import { Decimal } from 'decimal.js';
import { sql } from 'kysely';
import type { Db } from '../../src/db/index.ts';

export interface StockMove {
  variant_id: number;
  location_id: number;
  at: string;
  /** The sandbox operation that made the move (admin stock_moves). */
  cause?: string;
  stock_on_hand: string;
  committed: string;
  incoming: string;
}

interface Pending {
  at: number;
  after: string;
  cause: string;
}

const qty = (v: unknown) => new Decimal(String(v ?? 0)).toString();
const state = (onHand: unknown, committed: unknown, incoming: unknown) => `${qty(onHand)}|${qty(committed)}|${qty(incoming)}`;

export class StockLag {
  /** Lags (ms) of the moves caught up, per connection. */
  readonly lags = new Map<number, number[]>();
  /** Every move caught up: its lag (ms) and the operation that made it, to say what the tail is made of. */
  readonly caught: { lag: number; cause: string; key: string; at: number; written: number }[] = [];
  /** When each move happened (ms), for the floor. */
  readonly times: number[] = [];
  /** Distinct variants moved, as connection:variant. */
  readonly variants = new Set<string>();
  /** Moves not yet shown, oldest first, per connection:variant:location. */
  private readonly pending = new Map<string, Pending[]>();

  add(connectionId: number, moves: StockMove[]): void {
    for (const m of moves) {
      const key = `${connectionId}:${m.variant_id}:${m.location_id}`;
      const list = this.pending.get(key) ?? [];
      list.push({ at: Date.parse(m.at), after: state(m.stock_on_hand, m.committed, m.incoming), cause: m.cause ?? 'unknown' });
      this.pending.set(key, list);
      this.times.push(Date.parse(m.at));
      this.variants.add(`${connectionId}:${m.variant_id}`);
    }
  }

  /** The operations behind the moves whose lag is at or above `ms`, most frequent first, beside all moves. */
  tailCauses(ms: number): string {
    const all = new Map<string, number>();
    const tail = new Map<string, number>();
    for (const c of this.caught) {
      all.set(c.cause, (all.get(c.cause) ?? 0) + 1);
      if (c.lag >= ms) tail.set(c.cause, (tail.get(c.cause) ?? 0) + 1);
    }
    return [...tail.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([cause, n]) => `${cause} ${n} of ${all.get(cause)}`)
      .join(', ');
  }

  /** The `n` moves caught up slowest, slowest first (key: connection:variant:location). */
  slowest(n: number): StockLag['caught'] {
    return [...this.caught].sort((a, b) => b.lag - a.lag).slice(0, n);
  }

  /** Every lag caught up so far, sorted. */
  all(): number[] {
    return [...this.lags.values()].flat().sort((a, b) => a - b);
  }

  get open(): number {
    let n = 0;
    for (const l of this.pending.values()) n += l.length;
    return n;
  }

  /** Oldest move not yet shown, in ms (0 when none). */
  oldestOpenMs(now = Date.now()): number {
    let oldest = now;
    for (const l of this.pending.values()) if (l.length && l[0]!.at < oldest) oldest = l[0]!.at;
    return now - oldest;
  }

  /** Reads the mirror rows of every variant with open moves and settles what they show. */
  async check(db: Db): Promise<void> {
    if (!this.pending.size) return;
    const pairs = [...new Set([...this.pending.keys()].map((k) => k.split(':').slice(0, 2).join(':')))].map((p) =>
      p.split(':').map(Number),
    );
    const rows = (
      await sql<{
        connection_id: string;
        variant_id: string;
        location_id: string;
        on_hand: string;
        committed: string;
        incoming: string;
        synced_at: Date;
      }>`
      SELECT s.connection_id, s.variant_id, s.location_id, s.on_hand, s.committed, s.incoming, s.synced_at
      FROM stock_levels s JOIN unnest(${pairs.map((p) => p[0])}::bigint[], ${pairs.map((p) => p[1])}::bigint[]) AS w(c, v)
        ON s.connection_id = w.c AND s.variant_id = w.v`.execute(db)
    ).rows;
    for (const r of rows) {
      const key = `${r.connection_id}:${r.variant_id}:${r.location_id}`;
      const list = this.pending.get(key);
      if (!list) continue;
      const shown = state(r.on_hand, r.committed, r.incoming);
      // The newest move whose after-state the mirror shows: it and every older one are caught up.
      let last = -1;
      for (let i = list.length - 1; i >= 0; i--)
        if (list[i]!.after === shown) {
          last = i;
          break;
        }
      if (last < 0) continue;
      const written = r.synced_at.getTime();
      const lags = this.lags.get(Number(r.connection_id)) ?? [];
      for (const m of list.splice(0, last + 1)) {
        lags.push(Math.max(0, written - m.at));
        this.caught.push({ lag: Math.max(0, written - m.at), cause: m.cause, key, at: m.at, written });
      }
      this.lags.set(Number(r.connection_id), lags);
      if (!list.length) this.pending.delete(key);
    }
  }
}

/**
 * The floor: the lag if every changed variant were read in the next request slot after its move (one slot every
 * window / limit seconds, all of them spent on variant reads), with no delivery or queueing delay at all.
 */
export function floorLags(moveTimes: number[], slotMs: number, startMs: number): number[] {
  return moveTimes.map((at) => {
    const next = startMs + Math.ceil((at - startMs) / slotMs) * slotMs;
    return next - at;
  });
}

/** When a channel's endpoint got each quantity change, per variant: the change's time (`at`) and the POST's arrival. */
export type StockArrivals = Map<number, { changeAt: number; arrived: number }[]>;

/** Per caught move: from the move to the POST carrying the channel change its mirror write made (none: no change). */
export function postLags(caught: StockLag['caught'], arrivals: StockArrivals): number[] {
  const out: number[] = [];
  for (const c of caught) {
    const variant = Number(c.key.split(':')[1]);
    // The change its mirror write made: the same transaction, so the same now() (none when the write left the
    // channel quantity as it was; a later change of the variant is another move's).
    const hit = (arrivals.get(variant) ?? []).find((a) => Math.abs(a.changeAt - c.written) <= 1);
    if (hit) out.push(hit.arrived - c.at);
  }
  return out.sort((a, b) => a - b);
}
