// The one hook every write to the mirror goes through (src/sync/apply.ts calls it, in the write's transaction): the
// features that follow the mirror take their part in it, in this order, and apply.ts knows none of them.
// - the quantity engine (src/stock/after-write.ts): recomputes the channel quantities of the variants a write
//   touched, and ends the held lines it shows committed or cancelled;
// - the channels (src/channels/order-events.ts): record the order events it shows, and read back watched orders
//   whose lines' stock moved, and the fulfilments and returns a read channel order names that the mirror lacks.
// A feature joins by adding its part to `parts`; what it answers is gathered for the caller.
import type { Executor } from '../db/index.ts';
import type { Mark } from '../db/pending.ts';
import { orderEventsAfterWrite, type WriteOfOrders } from '../channels/order-events.ts';
import { quantitiesAfterWrite, type WriteOfStock } from '../stock/after-write.ts';
import type { Cause, NewChange } from '../stock/recompute.ts';
import type { ChannelRules } from '../stock/rules.ts';

export type { Cause, ChannelRules, NewChange };

/** One write to the mirror: what was read, what the write changed, and why; each feature's part reads its share. */
export type MirrorWrite = WriteOfStock & WriteOfOrders;

/** What a part did: channel quantity changes, channels that got order events, reads it calls for. */
export interface AfterWrite {
  changes: NewChange[];
  orderEvents: number[];
  followUps: Mark[];
}

/** A feature's part after a write, in the write's transaction. */
export type AfterMirrorWrite = (tx: Executor, write: MirrorWrite) => Promise<Partial<AfterWrite>>;

const parts: readonly AfterMirrorWrite[] = [quantitiesAfterWrite, orderEventsAfterWrite];

/** Runs every feature's part after a write, one after the other in `tx`, and gathers what they did. */
export async function afterMirrorWrite(tx: Executor, write: MirrorWrite): Promise<AfterWrite> {
  const out: AfterWrite = { changes: [], orderEvents: [], followUps: [] };
  for (const part of parts) {
    const r = await part(tx, write);
    out.changes.push(...(r.changes ?? []));
    out.orderEvents.push(...(r.orderEvents ?? []));
    out.followUps.push(...(r.followUps ?? []));
  }
  return out;
}
