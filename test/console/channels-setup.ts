// Three channels of one connection that show three different quantities of the same variant (issue 26): the
// mirror's write makes the `default` channel (both locations), the JSON API adds `marketplace` (the warehouse
// only, 2 units back) and `wholesale` (1 unit or 10%, no cap) with an own buffer of 4 for the SKU.
// SKU-1 has 10 in the warehouse and 5 on the shop floor: default 15, marketplace 8, wholesale 11.
import type { Db } from '../../src/db/index.ts';
import { mirror, variant } from '../channels/helpers.ts';
import { addConnection } from './harness.ts';

export async function threeChannels(db: Db, base: string, token: string) {
  const shop = await addConnection(db, 'shop');
  for (const [id, name] of [
    [1, 'Warehouse'],
    [2, 'Shop floor'],
  ] as const)
    await db.insertInto('locations').values({ connection_id: shop, id, name, status: 'active', raw: '{}' }).execute();
  await mirror(db, shop, [variant(1, { 1: ['10'], 2: ['5'] }), variant(2, { 1: ['3'], 2: ['0'] })]);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as any;
  };
  await call('POST', '/api/channels', { connection: 'shop', name: 'marketplace', locations: [1], buffer_units: '2' });
  await call('POST', '/api/channels', {
    connection: 'shop',
    name: 'wholesale',
    buffer_units: '1',
    buffer_percent: '10',
    cap_max_online: false,
  });
  await call('PUT', '/api/channels/wholesale/overrides/SKU-1?connection=shop', { mode: 'buffer', buffer_units: '4' });
  const channels = (await call('GET', '/api/channels?connection=shop')).channels as { id: number; name: string }[];
  const id = (name: string) => channels.find((c) => c.name === name)!.id;
  return { shop, call, channel: { default: id('default'), marketplace: id('marketplace'), wholesale: id('wholesale') } };
}
