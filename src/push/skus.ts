// SKU -> variant id from the mirror, for operations and holds that name variants by SKU.
import type { Db } from '../db/index.ts';
import { variantsBySku } from '../db/mirror-reads.ts';
import { OperationFailed } from './errors.ts';

/**
 * Mirror lookup SKU -> variant id. SKUs are not unique on the service (real-service-notes §6): a SKU held by
 * several live variants is refused naming them, never guessed; one held only by archived variants gives the
 * newest of them. Throws OperationFailed for unknown and ambiguous SKUs, all named at once.
 */
export async function variantIdsBySku(db: Db, connectionId: number, skus: string[]): Promise<Map<string, number>> {
  const unique = [...new Set(skus)];
  const out = new Map<string, number>();
  if (!unique.length) return out;
  const rows = await variantsBySku(db, connectionId, unique);
  const problems: string[] = [];
  for (const sku of unique) {
    const mine = rows.filter((r) => r.sku === sku);
    const live = mine.filter((r) => r.status !== 'archived');
    if (live.length > 1) {
      problems.push(
        `SKU ${sku} is held by ${live.length} live variants (ids ${live
          .map((r) => r.id)
          .sort((a, b) => a - b)
          .join(', ')}): give each variant a SKU of its own on the service, or archive the extra ones`,
      );
    } else if (live.length || mine.length) out.set(sku, (live[0] ?? mine[0])!.id);
  }
  const missing = unique.filter((s) => !out.has(s) && !problems.some((p) => p.startsWith(`SKU ${s} `)));
  if (missing.length) {
    problems.unshift(
      `unknown SKU${missing.length > 1 ? 's' : ''} ${missing.join(', ')}: not in the mirror of this connection's variants ` +
        '(check the SKU; a variant created minutes ago appears after the next sync, `commerce-sync reconcile`)',
    );
  }
  if (problems.length) throw new OperationFailed(problems.join('; '));
  return out;
}
