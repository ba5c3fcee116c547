// Keeps channel_quantities in step with the mirror and the holds: recomputes, in every channel of the
// connection, the variants a write touched (and every bundle that uses one of them as a component), first ending
// the held lines that write shows committed (held-lines.ts), records each change of a channel quantity with its
// cause in channel_quantity_changes, and writes stock changes to the sync log. docs/channels.md.
import { canonical } from '../catalog/records.ts';
import { withChannelLock } from '../db/locks.ts';
import type { Db, Executor } from '../db/index.ts';
import {
  adoptSettings,
  channelById,
  channelsOf,
  ensureDefaultChannel,
  lockQuantities,
  recordChanges,
  saveAppliedRules,
  saveQuantities,
  type Channel,
  type ChannelOverride,
  type NewChange,
  type QuantityRow,
  type StoredQuantity,
} from '../db/channels.ts';
import { linesToSettle, type HoldRef, type LinesOf } from '../db/holds.ts';
import type { HoldEnd } from '../db/schema.ts';
import { bundlesOf, variantIdsOf } from '../db/mirror-reads.ts';
import { readStock } from '../db/recompute-reads.ts';
import { logSync, type SyncLogInput } from '../db/synclog.ts';
import { lockVariants, settleLines } from './held-lines.ts';
import {
  channelQuantity,
  dec,
  fmt,
  rulesFrom,
  withAvailable,
  type ChannelRules,
  type Component,
  type LocationAvailability,
  type Override,
  type VariantStock,
  type Why,
} from './rules.ts';
import type { Config } from '../config.ts';

export type { NewChange };

/** Why a recomputation happened, recorded with every change it makes. */
export interface Cause {
  kind: 'delivery' | 'sweep' | 'full-sweep' | 'fetch' | 'cli' | 'rules' | 'hold';
  jobId?: string | null;
  /** Deliveries behind the fetch, newest last. */
  deliveries?: { rowId: number; deliveryId: string | null }[];
  /** Per variant: the deliveries that named it (overrides `deliveries` for that variant). */
  deliveriesByVariant?: Map<number, { rowId: number; deliveryId: string | null }[]>;
  /**
   * The service's clock (epoch ms, Raw.asOf) when the read whose records this write applies was answered: a held
   * line of a variant it returned ends in this very write when the read shows the line's order committed. Without
   * it, the variant's last noted read (variants.read_as_of) and its updated_at decide.
   */
  readAsOf?: number | null;
  /** The service's clock no earlier than that read (Raw.readBy): with readAsOf, when it happened (src/db/mirror.ts). */
  readBy?: number | null;
  /** Cause 'hold': the hold that was made or ended (its id, channel order and what happened). */
  hold?: { id: number; channel: string; channel_order_id: string; event: 'created' | HoldEnd };
}

/** What a stored quantity was computed from (channel_quantities.stock), and the `before`/`after` of a change. */
interface Snapshot {
  locations: LocationAvailability[];
  channel_quantity: string | null;
  listed: boolean;
  why: Why & { holds: (HoldRef & { variant_id: number })[] };
}

/** A stored quantity's snapshot, as stored (one stored before a field was added lacks it). */
type Stored = Partial<Snapshot> | null;

/** A channel row's rules. */
export function rulesOf(c: Pick<Channel, 'location_ids' | 'buffer_units' | 'buffer_percent' | 'cap_max_online'>): ChannelRules {
  return {
    locations: c.location_ids?.length ? new Set(c.location_ids.map(Number)) : null,
    safetyBuffer: c.buffer_units,
    bufferPercent: c.buffer_percent,
    capMaxOnline: c.cap_max_online,
  };
}

/** The rules a channel's stored quantities follow, as one string: 2.0 and 2 are the same rule. */
export function rulesFingerprint(r: ChannelRules): string {
  return JSON.stringify({
    locations: r.locations ? [...r.locations].sort((a, b) => a - b) : null,
    buffer: fmt(dec(r.safetyBuffer)),
    percent: r.bufferPercent == null || r.bufferPercent === '' ? null : fmt(dec(r.bufferPercent)),
    cap: r.capMaxOnline !== false,
  });
}

/**
 * Whether a channel's stored quantities wait for its rules: they were computed with other rules, or the channel
 * waits to adopt the settings' (connectionChannels).
 */
export function rulesDue(c: Channel): boolean {
  return c.adopt_settings.length > 0 || c.applied_rules !== rulesFingerprint(rulesOf(c));
}

/**
 * The channels of a connection. With the settings' rules (`seed`), a connection without a channel gets its
 * `default`, and a migrated default channel adopts the settings it was waiting for.
 */
export async function connectionChannels(db: Executor, connectionId: number, seed?: ChannelRules): Promise<Channel[]> {
  const list = await channelsOf(db, connectionId);
  if (!seed || (list.length && !list.some((c) => c.adopt_settings.length))) return list;
  const row = { location_ids: seed.locations ? [...seed.locations] : null, buffer_units: fmt(dec(seed.safetyBuffer)) };
  if (!list.length) await ensureDefaultChannel(db, connectionId, row);
  else await adoptSettings(db, connectionId, row);
  return channelsOf(db, connectionId);
}

const overrideOf = (o: ChannelOverride | undefined): Override | null =>
  !o
    ? null
    : o.mode === 'fixed'
      ? { mode: 'fixed', quantity: o.quantity! }
      : o.mode === 'buffer'
        ? { mode: 'buffer', units: o.buffer_units!, percent: o.buffer_percent }
        : { mode: o.mode };

const uniq = (ids: number[]) => [...new Set(ids.map(Number))];

/**
 * Ends the held lines a read shows committed (or cancelled) and recomputes their variants: for a read that
 * changed nothing (the drain's noted read of an unchanged variant), after a mirrored order changed (orderIds),
 * and for a hold whose order just became known (holdIds). Runs in the caller's transaction.
 */
export async function settleHolds(db: Executor, connectionId: number, by: LinesOf, cause: Cause): Promise<NewChange[]> {
  const lines = await linesToSettle(db, connectionId, by);
  if (!lines.length) return [];
  await lockVariants(
    db,
    connectionId,
    lines.map((l) => l.variant_id),
  );
  return recomputeVariants(db, connectionId, await settleLines(db, connectionId, by, cause), cause);
}

/**
 * Recomputes channel quantities for the given variants and the bundles built from them, in every channel of
 * the connection. Runs inside the caller's transaction so the change commits with the write that caused it.
 * `rules`: the settings' rules (channelRules), which a connection's first channel starts with. Returns the changes.
 */
export async function recomputeChannel(
  db: Executor,
  rules: ChannelRules,
  connectionId: number,
  variantIds: number[],
  cause: Cause,
): Promise<NewChange[]> {
  if (!variantIds.length) return [];
  return recompute(db, connectionId, variantIds, cause, await connectionChannels(db, connectionId, rules), true);
}

/** The same for a connection that has its channels (holds, overrides), or in `only` that channel. */
export async function recomputeVariants(
  db: Executor,
  connectionId: number,
  variantIds: number[],
  cause: Cause,
  only?: Channel,
): Promise<NewChange[]> {
  if (!variantIds.length) return [];
  return only
    ? recompute(db, connectionId, variantIds, cause, [only], false)
    : recompute(db, connectionId, variantIds, cause, await channelsOf(db, connectionId), true);
}

/**
 * The core: in `channels`, the variants and their bundles. `settle`: first end the held lines of the variants
 * that the mirror shows committed (only when every channel is recomputed, since a hold lowers them all).
 */
async function recompute(
  db: Executor,
  connectionId: number,
  variantIds: number[],
  cause: Cause,
  channels: Channel[],
  settle: boolean,
): Promise<NewChange[]> {
  const ids = uniq(variantIds);
  if (!ids.length || !channels.length) return [];
  const targets = uniq([...ids, ...(await bundlesOf(db, connectionId, ids))]);
  const channelIds = channels.map((c) => c.id);
  // Lock first: what follows reads stock and holds as the last writer of these rows committed them.
  const before = new Map((await lockQuantities<Stored>(db, channelIds, targets)).map((r) => [`${r.channel_id}:${r.variant_id}`, r]));
  if (settle) await settleLines(db, connectionId, { variantIds: ids }, cause);
  const read = await readStock(db, connectionId, targets, channelIds);
  const { comps, held } = read;
  const variants = new Map<number, VariantStock>();
  for (const v of read.variants) variants.set(v.id, { ...v, locations: [] });
  for (const l of read.levels) variants.get(l.variant_id)?.locations.push(l);
  const heldQty = new Map([...held].map(([id, h]) => [id, h.held]));
  const overrides = new Map(read.overrides.map((o) => [`${o.channel_id}:${o.sku}`, o]));
  const makeup = new Map<number, { quantity: string; component_id: number }[]>();
  for (const c of comps) {
    const list = makeup.get(c.bundle_id) ?? [];
    list.push({ quantity: c.quantity, component_id: c.component_id });
    makeup.set(c.bundle_id, list);
  }
  const named = channels.find((c) => c.name === 'default') ?? channels[0]!;

  const rows: QuantityRow[] = [];
  const changes: NewChange[] = [];
  const logs: SyncLogInput[] = [];
  for (const id of targets) {
    const v = variants.get(id);
    if (!v) continue; // not mirrored (yet): nothing to show
    let components: Component[] | undefined;
    if (v.composite && makeup.has(id)) {
      components = makeup.get(id)!.map((c) => ({
        quantity: c.quantity,
        // A component we have not mirrored yet counts as out of stock, never as plenty.
        variant: variants.get(c.component_id) ?? {
          id: c.component_id,
          sku: null,
          status: 'active',
          composite: false,
          manage_stock: true,
          keep_selling: false,
          max_online: null,
          locations: [],
        },
      }));
    }
    const holds = [id, ...(components ?? []).map((c) => c.variant.id)].flatMap((vid) =>
      (held.get(vid)?.holds ?? []).map((h) => ({ ...h, variant_id: vid })),
    );
    const locations = v.locations.map(withAvailable);
    const dels = cause.deliveriesByVariant?.get(id) ?? cause.deliveries ?? [];
    const last = dels[dels.length - 1];
    const prevs: (StoredQuantity<Stored> | undefined)[] = [];
    const nows: Snapshot[] = [];
    let quantityMoved = false;
    for (const ch of channels) {
      const override = overrideOf(v.sku ? overrides.get(`${ch.id}:${v.sku}`) : undefined);
      const q = channelQuantity(v, rulesOf(ch), components, { held: heldQty, override });
      const snapshot: Snapshot = { locations, channel_quantity: q.quantity, listed: q.listed, why: { ...q.why, holds } };
      const prev = before.get(`${ch.id}:${id}`);
      prevs.push(prev);
      nows.push(snapshot);
      const quantityChanged =
        !prev ||
        prev.quantity !== q.quantity ||
        prev.tracked !== q.tracked ||
        prev.backorderable !== q.backorderable ||
        prev.listed !== q.listed;
      if (!quantityChanged && canonical(prev.stock) === canonical(snapshot)) continue;
      quantityMoved ||= quantityChanged;
      rows.push({
        connection_id: connectionId,
        channel_id: ch.id,
        variant_id: id,
        sku: v.sku,
        status: v.status,
        quantity: q.quantity,
        tracked: q.tracked,
        backorderable: q.backorderable,
        listed: q.listed,
        bundle: q.bundle,
        stock: snapshot,
      });
      if (!quantityChanged) continue;
      changes.push({
        connection_id: connectionId,
        channel_id: ch.id,
        channel: ch.name,
        variant_id: id,
        sku: v.sku,
        before_quantity: prev ? prev.quantity : null,
        before_tracked: prev ? prev.tracked : null,
        quantity: q.quantity,
        tracked: q.tracked,
        backorderable: q.backorderable,
        listed: q.listed,
        cause: cause.kind,
        delivery_id: last?.deliveryId ?? null,
        delivery_row_id: last?.rowId ?? null,
        job_id: cause.jobId ?? null,
        detail: JSON.stringify({
          deliveries: dels,
          hold: cause.hold,
          before: prev?.stock ?? null,
          after: snapshot,
          components: components?.map((c) => ({ variant_id: c.variant.id, sku: c.variant.sku, quantity: c.quantity })),
        }),
      });
    }
    // One sync-log entry per variant: its stock or a quantity moved (not when only the explanation's shape did).
    const prevAny = prevs.find((p) => p);
    const stockMoved =
      !prevAny ||
      canonical(prevAny.stock?.locations) !== canonical(locations) ||
      (prevAny.stock?.why?.held ?? '0') !== nows[0]!.why.held ||
      canonical(prevAny.stock?.why?.holds ?? []) !== canonical(holds);
    if (!quantityMoved && !stockMoved) continue;
    const at = channels.indexOf(named);
    const view = (snaps: (Snapshot | undefined)[], own?: Snapshot) => ({
      locations: own?.locations ?? null,
      held: own?.why?.held ?? '0',
      // The default channel's figure, where pages that show one quantity look.
      channel_quantity: snaps[at]?.channel_quantity ?? null,
      channels: Object.fromEntries(channels.map((c, i) => [c.name, snaps[i]?.channel_quantity ?? null])),
    });
    logs.push({
      connectionId,
      resource: 'variant',
      recordId: id,
      sku: v.sku,
      action: quantityMoved ? 'channel-quantity' : 'stock',
      before: prevAny
        ? view(
            prevs.map((p) => p?.stock as Snapshot | undefined),
            prevAny.stock as Snapshot,
          )
        : null,
      after: view(nows, nows[0]),
      jobId: cause.jobId ?? null,
      deliveryId: last?.deliveryId ?? null,
      detail: {
        cause: cause.kind,
        deliveries: dels.map((d) => d.deliveryId),
        hold: cause.hold,
        tracked: nows[0]!.channel_quantity !== null,
        backorderable: v.keep_selling,
        bundle: !!components,
      },
    });
  }
  if (!rows.length) return [];
  await saveQuantities(db, rows);
  await recordChanges(db, changes);
  await logSync(db, logs);
  return changes;
}

/**
 * Recomputes every mirrored variant of one channel (its rules changed), 1000 variants a transaction, and then
 * records the rules as applied. Each batch reads the channel afresh, so a change made meanwhile counts from the
 * next batch on (and, its fingerprint differing, the worker runs it again). Returns the number of changes, or
 * null when the channel is gone.
 */
export async function recomputeWholeChannel(
  db: Db,
  channelId: number,
  cause: Cause,
  onChanges?: (changes: NewChange[]) => Promise<void>,
): Promise<number | null> {
  // One recomputation of a channel at a time, whichever process asks: the others wait for it, then find the
  // rules applied already (several PATCHes at once make one pass over every variant, not one each).
  return withChannelLock(db, channelId, async () => {
    const start = await channelById(db, channelId);
    if (!start) return null;
    const fingerprint = rulesFingerprint(rulesOf(start));
    if (start.applied_rules === fingerprint) return 0;
    const ids = await variantIdsOf(db, start.connection_id);
    let n = 0;
    for (let i = 0; i < ids.length; i += 1000) {
      const changes = await db.transaction().execute(async (tx) => {
        const ch = await channelById(tx, channelId);
        return ch ? recompute(tx, ch.connection_id, ids.slice(i, i + 1000), cause, [ch], false) : null;
      });
      if (changes === null) return null;
      n += changes.length;
      if (changes.length && onChanges) await onChanges(changes);
    }
    await saveAppliedRules(db, channelId, fingerprint);
    return n;
  });
}

/**
 * Recomputes the channels of a connection whose rules differ from those their stored quantities were computed
 * with (cause 'rules'): after a change the API or CLI could not finish, and after migration 0130. Makes a new
 * connection's default channel from the settings. Returns the number of changes, or null when nothing was due.
 */
export async function applyRulesIfChanged(
  db: Db,
  config: Pick<Config, 'CHANNEL_LOCATIONS' | 'CHANNEL_SAFETY_BUFFER'>,
  connectionId: number,
  onChanges?: (changes: NewChange[]) => Promise<void>,
): Promise<number | null> {
  let n: number | null = null;
  for (const ch of await connectionChannels(db, connectionId, rulesFrom(config))) {
    if (!rulesDue(ch)) continue;
    n = (n ?? 0) + ((await recomputeWholeChannel(db, ch.id, { kind: 'rules' }, onChanges)) ?? 0);
  }
  return n;
}
