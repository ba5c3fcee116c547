// The quantity engine's part after a write to the mirror (src/sync/after-write.ts hands it every write), in the
// write's transaction: a write of variants recomputes the channel quantities of those it changed or found gone, a
// write of bundles' makeup those whose makeup changed; and a read of variants or of orders, even one that changed
// nothing, ends the held lines it shows committed or cancelled (docs/channels.md).
import type { Fields } from '../catalog/records.ts';
import type { Executor } from '../db/index.ts';
import { recomputeChannel, settleHolds, type Cause, type NewChange } from './recompute.ts';
import type { ChannelRules } from './rules.ts';

/** A write to the mirror, as far as quantities care. */
export interface WriteOfStock {
  connectionId: number;
  /** The settings' rules, which a connection's first channel starts with. */
  rules: ChannelRules;
  cause: Cause;
  /** The resource written: its catalogue name (`composition` for bundles' makeup). */
  resource: string;
  /** What the read returned, written or not. */
  records: readonly Fields[];
  /** Ids the write inserted or changed (bundle ids for makeup). */
  applied: number[];
  /** Ids the service no longer has. */
  gone: number[];
}

/** Recomputes and settles after a write (above); answers the channel quantity changes, in the order made. */
export async function quantitiesAfterWrite(tx: Executor, w: WriteOfStock): Promise<{ changes: NewChange[] }> {
  const touched = w.resource === 'variant' || w.resource === 'composition' ? [...w.applied, ...w.gone] : [];
  const changes = touched.length ? await recomputeChannel(tx, w.rules, w.connectionId, touched, w.cause) : [];
  if (w.resource === 'variant' || w.resource === 'order') {
    const read = w.records.map((r) => Number(r?.id)).filter(Number.isSafeInteger);
    const by = w.resource === 'variant' ? { variantIds: read } : { orderIds: read };
    if (read.length) changes.push(...(await settleHolds(tx, w.connectionId, by, w.cause)));
  }
  return { changes };
}
