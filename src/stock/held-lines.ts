// Ending held lines (docs/channels.md, Holds): a line held for a channel order ends in the write whose read shows
// the order committed, or cancelled (the rule is heldLineEnds, src/stock/rules.ts), with a sync-log entry per hold;
// and the lock a hold's change takes first, in the order the recomputation (recompute.ts) takes it, so the two take
// turns and never deadlock. The recomputation settles the lines of what it recomputes; the holds' own changes
// (src/channels/holds.ts) lock and log here too.
import { channelsOf, lockQuantities } from '../db/channels.ts';
import { endHeldLines, linesToSettle, type LinesOf } from '../db/holds.ts';
import type { Executor } from '../db/index.ts';
import { bundlesOf } from '../db/mirror-reads.ts';
import type { HoldEnd } from '../db/schema.ts';
import { logSync } from '../db/synclog.ts';
import { heldLineEnds } from './rules.ts';

const uniq = (ids: number[]) => [...new Set(ids.map(Number))];
const later = (...ms: (number | null | undefined)[]) => {
  const known = ms.filter((m): m is number => typeof m === 'number' && !Number.isNaN(m));
  return known.length ? Math.max(...known) : null;
};

/** Writes a sync-log entry per hold whose lines ended, with its cause. */
export async function logHoldEnds(
  db: Executor,
  connectionId: number,
  ended: Awaited<ReturnType<typeof endHeldLines>>,
  cause: HoldEnd,
  about: Map<number, { channel: string; channel_order_id: string }>,
  jobId?: string | null,
): Promise<void> {
  const whole = new Set(ended.holds.map((h) => h.id));
  const holdIds = uniq([...ended.lines.map((l) => l.hold_id), ...whole]);
  await logSync(
    db,
    holdIds.map((id) => ({
      connectionId,
      resource: 'hold',
      recordId: id,
      action: `hold.${cause}`,
      jobId: jobId ?? null,
      detail: {
        ...about.get(id),
        cause,
        hold_ended: whole.has(id),
        lines: ended.lines.filter((l) => l.hold_id === id).map((l) => ({ variant_id: l.variant_id, sku: l.sku, quantity: l.quantity })),
      },
    })),
  );
}

/**
 * Ends the held lines the mirror now shows committed, or whose order it shows cancelled (src/stock/rules.ts
 * heldLineEnds), with a sync-log entry per hold. The caller holds the lines' variants' quantities locked
 * (lockVariants), so this commits with the mirror write, or the recomputation, that shows it. Returns the
 * variants whose held lines ended.
 */
export async function settleLines(
  db: Executor,
  connectionId: number,
  by: LinesOf,
  cause: { readAsOf?: number | null; jobId?: string | null },
): Promise<number[]> {
  const lines = await linesToSettle(db, connectionId, by);
  const due = new Map<HoldEnd, number[]>();
  const about = new Map<number, { channel: string; channel_order_id: string }>();
  for (const l of lines) {
    const end = heldLineEnds({
      orderStatus: l.order_status,
      orderUpdatedAt: l.order_updated_at?.getTime() ?? null,
      orderAt: l.order_at?.getTime() ?? null,
      marginMs: l.clock_margin_ms,
      shownAt: later(l.read_as_of?.getTime(), l.variant_updated_at?.getTime(), cause.readAsOf),
    });
    if (!end) continue;
    due.set(end, [...(due.get(end) ?? []), l.id]);
    about.set(l.hold_id, { channel: l.channel, channel_order_id: l.channel_order_id });
  }
  const variants: number[] = [];
  for (const [end, lineIds] of due) {
    const ended = await endHeldLines(db, { lineIds }, end);
    await logHoldEnds(db, connectionId, ended, end, about, cause.jobId);
    variants.push(...ended.lines.map((l) => l.variant_id));
  }
  return uniq(variants);
}

/**
 * Locks the stored quantities of the variants and their bundles in every channel of the connection: what
 * changes holds takes it before it touches a held line, in the same order the recomputation does, so a hold's
 * change and a mirror write of the same variant take turns (neither overwrites the other) and never deadlock.
 */
export async function lockVariants(db: Executor, connectionId: number, variantIds: number[]): Promise<void> {
  const ids = uniq(variantIds);
  if (!ids.length) return;
  const channels = await channelsOf(db, connectionId);
  await lockQuantities(
    db,
    channels.map((c) => c.id),
    uniq([...ids, ...(await bundlesOf(db, connectionId, ids))]),
  );
}
