// Managing channels and their per-SKU overrides (the API and the CLI share this): input checks that name the
// bad value, which channel a name means, and each change with the recomputation it calls for. docs/channels.md.
import { boundedText, DECIMAL, KEY_LENGTH, wholeNumber } from '../inputs.ts';
import { z } from 'zod';
import {
  channelById,
  channelsOf,
  deleteChannel,
  deleteOverride,
  insertChannel,
  listChannels,
  saveOverride,
  updateChannelRules,
  type Channel,
  type ChannelOverride,
  type ChannelRulesRow,
} from '../db/channels.ts';
import type { Db } from '../db/index.ts';
import { variantsBySku } from '../db/mirror-reads.ts';
import { logSync } from '../db/synclog.ts';
import { recomputeVariants, recomputeWholeChannel, rulesFingerprint, rulesOf, type NewChange } from '../stock/recompute.ts';
import { dec, fmt } from '../stock/rules.ts';
import { decimal as decimalText, timestamp } from '../openapi/registry.ts';

/** Input that cannot be taken: each problem names the field and the value. */
export class ChannelInputError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('; '));
    this.problems = problems;
  }
}

/** A channel name that means no channel, or several (then `connection` must say which). */
export class ChannelChoiceError extends Error {
  readonly status: 400 | 404 | 409;
  constructor(status: 400 | 404 | 409, message: string) {
    super(message);
    this.status = status;
  }
}

const decimal = z.union([
  z.string().trim().regex(DECIMAL, 'a decimal of 0 or more such as "5" or "2.5", at most 15 digits before the point and 8 after'),
  wholeNumber.nonnegative(),
]);
// Zod runs the refinement on a value the decimal check refused too: that one is not a decimal to compare.
const percent = decimal.refine((v) => !DECIMAL.test(String(v)) || dec(String(v)).lessThanOrEqualTo(100), 'a percentage from 0 to 100');
const channelFields = {
  locations: z
    .union([z.literal('all'), z.null(), z.array(z.number().int().positive()).min(1, 'at least one location id (or null for all)')])
    .transform((v) => (v === 'all' ? null : v)),
  buffer_units: decimal,
  buffer_percent: z.union([percent, z.null()]),
  cap_max_online: z.boolean(),
};
const channelInput = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, dot, dash or underscore, at most 64, starting with a letter or digit'),
  ...channelFields,
});
/** A new channel (POST /api/channels): its name, and rules left out take the defaults. */
export const newChannelInput = channelInput.partial({ locations: true, buffer_units: true, buffer_percent: true, cap_max_online: true });
/** A change of a channel's rules (PATCH /api/channels/:name): any of them. */
export const channelChange = z.strictObject(channelFields).partial();
export const overrideInput = z.strictObject({
  mode: z.enum(['exclude', 'zero', 'fixed', 'buffer']),
  quantity: decimal.optional(),
  buffer_units: decimal.optional(),
  buffer_percent: z.union([percent, z.null()]).optional(),
});

/** Parses input with a schema; ChannelInputError with a line per problem naming the field and the value it got. */
export function parseInput<T extends z.ZodType>(schema: T, raw: unknown): z.infer<T> {
  const r = schema.safeParse(raw);
  if (r.success) return r.data;
  throw new ChannelInputError(
    r.error.issues.map((i) => {
      let got: unknown = raw;
      for (const k of i.path) got = got == null ? undefined : (got as Record<PropertyKey, unknown>)[k];
      const field = i.path.join('.') || 'input';
      return `${field}: ${i.message}${got !== undefined && i.path.length ? ` (got ${JSON.stringify(got)})` : ''}`;
    }),
  );
}

/** A channel as presentChannel shows it (the counts only where a listing read them). */
export const channelSchema = z
  .object({
    id: z.number().int(),
    connection: z.string(),
    name: z.string(),
    locations: z.array(z.number().int()).nullable().describe('Location ids whose stock counts; null: all.'),
    buffer_units: decimalText,
    buffer_percent: decimalText.nullable(),
    cap_max_online: z.boolean(),
    applied: z.boolean().describe('The stored quantities follow these rules (false while a recomputation has not finished).'),
    overrides: z.number().int().optional(),
    active_holds: z.number().int().optional(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Channel' });
export const overrideSchema = z
  .object({
    sku: z.string(),
    mode: z.enum(['exclude', 'zero', 'fixed', 'buffer']),
    quantity: decimalText.nullable(),
    buffer_units: decimalText.nullable(),
    buffer_percent: decimalText.nullable(),
    updated_at: timestamp,
  })
  .meta({ id: 'Override' });

/** A channel as the API shows it; its `connection` is there when the row has one (the routes' always do). */
export function presentChannel<C extends Channel & { connection?: string; overrides?: number; active_holds?: number }>(c: C) {
  const rules = rulesOf(c);
  return {
    id: c.id,
    connection: c.connection as C['connection'],
    name: c.name,
    locations: c.location_ids?.length ? c.location_ids.map(Number) : null,
    buffer_units: fmt(dec(c.buffer_units)),
    buffer_percent: c.buffer_percent === null ? null : fmt(dec(c.buffer_percent)),
    cap_max_online: c.cap_max_online,
    // The stored quantities follow these rules (false while a recomputation has not finished).
    applied: c.applied_rules === rulesFingerprint(rules),
    overrides: c.overrides,
    active_holds: c.active_holds,
    created_at: c.created_at,
    updated_at: c.updated_at,
  };
}

export function presentOverride(o: ChannelOverride) {
  return {
    sku: o.sku,
    mode: o.mode,
    quantity: o.quantity === null ? null : fmt(dec(o.quantity)),
    buffer_units: o.buffer_units === null ? null : fmt(dec(o.buffer_units)),
    buffer_percent: o.buffer_percent === null ? null : fmt(dec(o.buffer_percent)),
    updated_at: o.updated_at,
  };
}

/**
 * The channel a name means: on the named connection, or on the only connection that has a channel by that
 * name. Several: 400 asking for the connection; none: 404.
 */
/** A channel as the doors find it: with its connection's name. */
export type FoundChannel = Channel & { connection: string };

export async function findChannel(db: Db, name: string, connection?: string | null): Promise<FoundChannel> {
  const found = (await listChannels(db, { name })).filter((c) => !connection || c.connection === connection);
  if (found.length === 1) return found[0]!;
  if (!found.length)
    throw new ChannelChoiceError(
      404,
      `no channel "${name}"${connection ? ` on connection "${connection}"` : ''} (see GET /api/channels or \`commerce-sync channels list\`)`,
    );
  throw new ChannelChoiceError(
    400,
    `channel "${name}" exists on several connections (${found.map((c) => c.connection).join(', ')}): say which with connection=NAME`,
  );
}

const toRow = (v: Partial<z.infer<typeof channelInput>>, base: ChannelRulesRow): ChannelRulesRow => ({
  location_ids: v.locations !== undefined ? v.locations : base.location_ids,
  buffer_units: v.buffer_units !== undefined ? fmt(dec(String(v.buffer_units))) : base.buffer_units,
  buffer_percent:
    v.buffer_percent !== undefined ? (v.buffer_percent === null ? null : fmt(dec(String(v.buffer_percent)))) : base.buffer_percent,
  cap_max_online: v.cap_max_online ?? base.cap_max_online,
});

export interface Recomputed {
  /** Quantity changes the recomputation recorded (cause 'rules'). */
  changes: number;
  ms: number;
}

/** Recomputes the channel's quantities; returns it as it is then (applied) with what that took. */
async function recomputeAll(db: Db, channelId: number): Promise<{ channel: Channel; recomputed: Recomputed }> {
  const started = performance.now();
  const n = (await recomputeWholeChannel(db, channelId, { kind: 'rules' })) ?? 0;
  return { channel: (await channelById(db, channelId))!, recomputed: { changes: n, ms: Math.round(performance.now() - started) } };
}

/** Adds a channel to a connection and computes its quantity of every mirrored variant. */
export async function addChannel(db: Db, connectionId: number, raw: unknown): Promise<{ channel: Channel; recomputed: Recomputed }> {
  const v = parseInput(newChannelInput, raw);
  if ((await channelsOf(db, connectionId)).some((c) => c.name === v.name))
    throw new ChannelChoiceError(409, `channel "${v.name}" exists already on this connection: change it instead`);
  const channel = await insertChannel(
    db,
    connectionId,
    v.name,
    toRow(v, { location_ids: null, buffer_units: '0', buffer_percent: null, cap_max_online: true }),
  );
  await logSync(db, {
    connectionId,
    resource: 'channel',
    recordId: channel.id,
    action: 'channel.added',
    after: presentChannel(channel),
  });
  return recomputeAll(db, channel.id);
}

/** Changes a channel's rules (not its name: holds, imports and feeds know it by that) and recomputes it. */
export async function changeChannel(db: Db, channel: Channel, raw: unknown): Promise<{ channel: Channel; recomputed: Recomputed }> {
  const v = parseInput(channelChange, raw);
  if (!Object.keys(v).length)
    throw new ChannelInputError(['input: nothing to change (locations, buffer_units, buffer_percent, cap_max_online)']);
  const rules = toRow(v, channel);
  // The same rules again (2.0 for 2 included) change nothing: no write, no recomputation of every variant.
  const fingerprint = rulesFingerprint(rulesOf(rules));
  if (fingerprint === rulesFingerprint(rulesOf(channel)) && channel.applied_rules === fingerprint)
    return { channel, recomputed: { changes: 0, ms: 0 } };
  const changed = await updateChannelRules(db, channel.id, rules);
  await logSync(db, {
    connectionId: channel.connection_id,
    resource: 'channel',
    recordId: channel.id,
    action: 'channel.changed',
    before: presentChannel(channel),
    after: presentChannel(changed),
  });
  return recomputeAll(db, changed.id);
}

/** Removes a channel with its quantities, history and overrides; a connection keeps at least one. */
export async function removeChannel(db: Db, channel: Channel): Promise<void> {
  if ((await channelsOf(db, channel.connection_id)).length <= 1)
    throw new ChannelChoiceError(409, `channel "${channel.name}" is the connection's only channel: change its rules instead`);
  await db.transaction().execute(async (tx) => {
    await deleteChannel(tx, channel.id);
    await logSync(tx, {
      connectionId: channel.connection_id,
      resource: 'channel',
      recordId: channel.id,
      action: 'channel.removed',
      before: presentChannel(channel),
    });
  });
}

/** Sets (or replaces) a channel's override of a SKU and recomputes that SKU's variants in the channel. */
export async function setOverride(
  db: Db,
  channel: Channel,
  rawSku: string,
  raw: unknown,
): Promise<{ override: ReturnType<typeof presentOverride>; changes: NewChange[] }> {
  const { sku } = parseInput(z.object({ sku: boundedText(KEY_LENGTH) }), { sku: rawSku });
  const v = parseInput(overrideInput, raw);
  const problems: string[] = [];
  if (v.mode === 'fixed' && v.quantity === undefined) problems.push('quantity: a fixed override needs the quantity to show');
  if (v.mode !== 'fixed' && v.quantity !== undefined)
    problems.push(`quantity: only a fixed override has one (got ${JSON.stringify(v.quantity)})`);
  if (v.mode !== 'buffer' && (v.buffer_units !== undefined || (v.buffer_percent ?? null) !== null))
    problems.push('buffer_units, buffer_percent: only a buffer override has them');
  if (v.mode === 'buffer' && v.buffer_units === undefined && (v.buffer_percent ?? null) === null)
    problems.push('buffer_units: a buffer override needs buffer_units, buffer_percent or both');
  // Only a SKU the mirror has: overrides are then as many as the catalogue's SKUs at most (not one per name anyone
  // sends), and a mistyped SKU is refused instead of kept doing nothing. A SKU new at the service gets its override
  // once its variant has synced, like a hold's lines.
  if (!problems.length && !(await variantsBySku(db, channel.connection_id, [sku])).length)
    problems.push(`sku: the connection has no variant with SKU ${JSON.stringify(sku)} in the mirror`);
  if (problems.length) throw new ChannelInputError(problems);
  const row: ChannelOverride = {
    channel_id: channel.id,
    sku,
    mode: v.mode,
    quantity: v.quantity === undefined ? null : fmt(dec(String(v.quantity))),
    buffer_units: v.mode === 'buffer' ? fmt(dec(String(v.buffer_units ?? 0))) : null,
    buffer_percent: v.buffer_percent == null ? null : fmt(dec(String(v.buffer_percent))),
    updated_at: new Date(),
  };
  const changes = await db.transaction().execute(async (tx) => {
    await saveOverride(tx, row);
    await logSync(tx, {
      connectionId: channel.connection_id,
      resource: 'channel',
      recordId: channel.id,
      sku,
      action: 'channel.override-set',
      after: { channel: channel.name, ...presentOverride(row) },
    });
    return recomputeSku(tx, channel, sku);
  });
  return { override: presentOverride(row), changes };
}

/** Removes a channel's override of a SKU (undefined: there was none) and recomputes its variants there. */
export async function removeOverride(db: Db, channel: Channel, sku: string): Promise<NewChange[] | undefined> {
  return db.transaction().execute(async (tx) => {
    if (!(await deleteOverride(tx, channel.id, sku))) return undefined;
    await logSync(tx, {
      connectionId: channel.connection_id,
      resource: 'channel',
      recordId: channel.id,
      sku,
      action: 'channel.override-removed',
      detail: { channel: channel.name, sku },
    });
    return recomputeSku(tx, channel, sku);
  });
}

async function recomputeSku(tx: Db, channel: Channel, sku: string): Promise<NewChange[]> {
  const ids = (await variantsBySku(tx, channel.connection_id, [sku])).map((r) => r.id);
  return recomputeVariants(tx, channel.connection_id, ids, { kind: 'rules' }, channel);
}
