// What of a sweep's changes is drift (docs/alerts.md): a record the sweep found changed that a delivery or a queued
// read explains was about to be read by a drain anyway, and does not count. src/sync/sweep.ts asks, page by page.
import type { ResourceSpec } from '../catalog/index.ts';
import type { Fields } from '../catalog/records.ts';
import { announcedAmong } from '../db/delivery-reads.ts';
import type { Db } from '../db/index.ts';
import { pendingAmong } from '../db/pending.ts';

/**
 * Of the records a page changed, how many a delivery or a queued read explains: a pending row for the record, or a
 * delivery about it whose event time is at or after the updated_at read (less the clock margin); for a record that
 * sums its variants' stock, one of its variants'. The drain was about to read those; they are not drift
 * (docs/alerts.md).
 */
export async function explainedDrift(
  db: Db,
  connectionId: number,
  spec: ResourceSpec,
  records: readonly Fields[],
  changed: number[],
  marginMs = 5000,
): Promise<number> {
  if (!changed.length) return 0;
  const ids = new Set(changed);
  const pending = await pendingAmong(db, connectionId, spec.name, changed);
  const rest = records.filter((r) => ids.has(Number(r?.id)) && !pending.has(Number(r?.id)));
  const announced = await announcedAmong(
    db,
    connectionId,
    spec.name,
    rest.filter((r) => typeof r?.updated_at === 'string').map((r) => ({ id: Number(r.id), updatedAt: r.updated_at as string })),
    marginMs,
  );
  let n = pending.size + announced.size;
  // A record that sums its variants' stock (a product's `quantity`) changes with them, its updated_at unmoved and no
  // event of its own: explained when a read of one of its variants is queued, or a delivery about one arrived within
  // the hour. A variant whose delivery was lost is drift itself, in the same sweep.
  const field = spec.variantIdsField;
  if (field) {
    const variantsOf = (r: Fields): unknown[] => {
      const list = r?.[field];
      return Array.isArray(list) ? list : [];
    };
    const left = rest.filter((r) => !announced.has(Number(r.id)) && variantsOf(r).length);
    const variantIds = [...new Set(left.flatMap((r) => variantsOf(r).map(Number).filter(Number.isFinite)))];
    if (variantIds.length) {
      const read = await pendingAmong(db, connectionId, 'variant', variantIds);
      const told = await announcedAmong(
        db,
        connectionId,
        'variant',
        variantIds.filter((id) => !read.has(id)).map((id) => ({ id, updatedAt: new Date(0).toISOString() })),
        0,
      );
      n += left.filter((r) => variantsOf(r).some((v) => read.has(Number(v)) || told.has(Number(v)))).length;
    }
  }
  return n;
}
