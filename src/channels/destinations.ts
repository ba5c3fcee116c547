// A channel's destination as an operator manages it (JSON API, CLI, console): set it (URL and `whsec_` secrets,
// from the first change kept or from now), show it (caught up or behind by N, failing since, last answer, recent
// POSTs), pause and resume it, remove it. The sender: src/channels/dispatch.ts; the rows: src/db/channel-destinations.ts.
import { z } from 'zod';
import { encryptToken } from '../api/secrets.ts';
import { lastOrderEventId } from '../db/channel-order-events.ts';
import type { DestinationKind } from '../db/schema.ts';
import { lastChangeId } from '../db/channels.ts';
import {
  destinationStates,
  destinationStatus,
  pauseDestination,
  recentPosts,
  removeDestination,
  resumeDestination,
  saveDestination,
  type ChannelPost,
  type DestinationState,
  type DestinationStatus,
} from '../db/channel-destinations.ts';
import type { Db } from '../db/index.ts';
import { type AllowedHosts, checkDestination, DestinationRefused } from './address-guard.ts';
import { hostOf, newSecret, parseSecrets, validSecret } from './sender.ts';
import { ChannelInputError } from './channels.ts';

export const destinationInput = z.object({
  url: z.string().refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), 'an http(s) URL'),
  /** `whsec_` secrets, current first, separated by spaces; absent: one is made (and shown once). */
  secret: z
    .string()
    .refine(
      (s) => parseSecrets(s).length > 0 && parseSecrets(s).every(validSecret),
      'whsec_ and the base64 of 24 to 64 bytes, several separated by spaces',
    )
    .optional(),
  /** start: every quantity from the first change kept (a new endpoint gets the whole picture); now: only what changes next. */
  from: z.enum(['start', 'now']).optional(),
  /** What it wants POSTed: stock (quantity changes), orders (order events) or both (the default). */
  kinds: z
    .union([z.enum(['stock', 'orders', 'both']), z.array(z.enum(['stock', 'orders'])).min(1)])
    .transform((k): DestinationKind[] => (k === 'both' ? ['stock', 'orders'] : Array.isArray(k) ? [...new Set(k)] : [k]))
    .optional(),
});

/** What an operator sees of a destination: its state (the URL shown by host only) and its recent POSTs. */
export interface DestinationView extends Omit<DestinationState, 'url'> {
  host: string;
  state: DestinationStatus;
  posts: ChannelPost[];
}

/** Sets a channel's destination; `allow`: the hosts that may be internal addresses (OUTBOUND_ALLOWED_HOSTS). */
export async function setDestination(
  db: Db,
  key: Buffer,
  channelId: number,
  raw: unknown,
  allow: AllowedHosts,
): Promise<{ view: DestinationView; secret: string | null }> {
  const parsed = destinationInput.safeParse(raw);
  if (!parsed.success) throw new ChannelInputError(parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`));
  try {
    await checkDestination(parsed.data.url, allow);
  } catch (err) {
    if (err instanceof DestinationRefused) throw new ChannelInputError([`url: ${err.message}`]);
    throw err;
  }
  const made = parsed.data.secret ? null : newSecret();
  const secrets = parsed.data.secret ?? made!;
  const now = parsed.data.from === 'now';
  const startAfter = now ? await lastChangeId(db, channelId) : 0;
  const orderStartAfter = now ? await lastOrderEventId(db, channelId) : 0;
  await saveDestination(db, channelId, {
    url: parsed.data.url,
    secrets: encryptToken(key, secrets),
    startAfter,
    orderStartAfter,
    kinds: parsed.data.kinds,
  });
  return { view: (await viewDestination(db, channelId))!, secret: made };
}

export async function viewDestination(db: Db, channelId: number): Promise<DestinationView | null> {
  const [state] = await destinationStates(db, { channelId });
  if (!state) return null;
  const { url, ...rest } = state;
  return { ...rest, host: hostOf(url), state: destinationStatus(state), posts: await recentPosts(db, channelId) };
}

export { pauseDestination, removeDestination, resumeDestination };
