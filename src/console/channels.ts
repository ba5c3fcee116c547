// The console's Channels page: per connection its channels with their rules (locations counted, buffer, max_online
// cap), overrides, the destination's state and recent POSTs, and the active holds. Reads only: what a channel is
// and does lives in src/channels/ (channels, holds, the POSTs) and its quantities in src/stock/ (rules, recomputation).
import { listChannels, listOverrides } from '../db/channels.ts';
import { listHolds } from '../db/holds.ts';
import { destinationStates, recentPosts, type ChannelPost, type DestinationState } from '../db/channel-destinations.ts';
import type { Db } from '../db/index.ts';
import { locationNames } from '../db/mirror-reads.ts';
import { presentChannel, presentOverride } from '../channels/channels.ts';
import { presentHold } from '../channels/holds.ts';
import { recentOrdersOf, type ChannelOrderSummary } from './channel-orders.ts';

/** Recent POSTs shown per destination. */
const POSTS = 10;
/** Active holds shown per connection. */
const HOLDS = 200;
/** Recent channel orders shown per connection. */
const ORDERS = 15;

export interface ChannelView {
  id: number;
  name: string;
  /** Locations counted, named (null: all). */
  locations: { id: number; name: string }[] | null;
  bufferUnits: string;
  bufferPercent: string | null;
  capMaxOnline: boolean;
  /** The stored quantities follow the rules (false while a recomputation has not finished). */
  applied: boolean;
  activeHolds: number;
  overrides: ReturnType<typeof presentOverride>[];
  destination: DestinationState | null;
  posts: ChannelPost[];
}

export interface ConnectionChannels {
  id: number;
  name: string;
  channels: ChannelView[];
  /** Active holds of the connection's channels, newest first (a hold lowers every channel). */
  holds: ReturnType<typeof presentHold>[];
  /** The channel orders of its channels that moved last (an event told, a hold made or ended), newest first. */
  orders: ChannelOrderSummary[];
}

/** Every connection's channels (or one connection's), by connection name then channel age. */
export async function channelsOverview(db: Db, connectionId?: number): Promise<ConnectionChannels[]> {
  const [channels, destinations] = await Promise.all([listChannels(db, { connectionId }), destinationStates(db, { connectionId })]);
  const byConnection = new Map<number, { name: string; rows: typeof channels }>();
  for (const c of channels) {
    const id = c.connection_id;
    const entry = byConnection.get(id) ?? { name: c.connection, rows: [] };
    entry.rows.push(c);
    byConnection.set(id, entry);
  }
  return Promise.all(
    [...byConnection].map(async ([id, { name, rows }]) => {
      const [locations, holds, orders] = await Promise.all([
        locationNames(db, id),
        listHolds(db, { connectionId: id, state: 'active', limit: HOLDS }),
        recentOrdersOf(
          db,
          rows.map((c) => ({ id: c.id, connection_id: id, name: c.name })),
          ORDERS,
        ),
      ]);
      const views = await Promise.all(
        rows.map(async (c): Promise<ChannelView> => {
          const shown = presentChannel(c);
          const destination = destinations.find((d) => d.channel_id === c.id) ?? null;
          const [overrides, posts] = await Promise.all([
            listOverrides(db, c.id),
            destination ? recentPosts(db, c.id, POSTS) : Promise.resolve([]),
          ]);
          return {
            id: shown.id,
            name: c.name,
            locations: shown.locations?.map((l) => ({ id: l, name: locations.get(l) ?? `location ${l}` })) ?? null,
            bufferUnits: shown.buffer_units,
            bufferPercent: shown.buffer_percent,
            capMaxOnline: shown.cap_max_online,
            applied: shown.applied,
            activeHolds: c.active_holds,
            overrides: overrides.map(presentOverride),
            destination,
            posts,
          };
        }),
      );
      return { id, name, channels: views, holds: holds.map(presentHold), orders };
    }),
  );
}
