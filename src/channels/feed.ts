// The channel feed: channel quantity changes after a cursor (the change id), oldest first. Ids become
// visible in order (writers serialise on a lock, see db/channels.ts), so a reader that follows `next` never
// skips a change; a cursor older than what retention keeps (CHANNEL_CHANGE_RETENTION_DAYS) gets `expired`.
import type { Db } from '../db/index.ts';
import { changesAfter, prunedThrough, type FeedItem } from '../db/channels.ts';

export interface FeedPage {
  changes: FeedItem[];
  next: number;
  has_more: boolean;
}

/** The cursor is older than what retention keeps: changes after it, up to `kept_after`, were deleted. */
export interface FeedExpired {
  expired: true;
  since: number;
  /** The newest deleted change id: every change after it is kept. */
  kept_after: number;
}

export async function channelFeed(
  db: Db,
  opts: { since: number; limit: number; connection?: string | null; channelId?: number },
): Promise<FeedPage | FeedExpired> {
  const rows = await changesAfter(db, opts);
  // Read after the changes: had retention deleted any change after `since` before that read, this says so
  // (the mark only grows), so a page never skips a change silently.
  const through = await prunedThrough(db);
  if (opts.since < through) return { expired: true, since: opts.since, kept_after: through };
  const list = rows.slice(0, opts.limit).map((r) => ({ ...r, at: new Date(r.at).toISOString() }));
  return { changes: list, next: list.length ? list[list.length - 1]!.id : opts.since, has_more: rows.length > opts.limit };
}
