// The connections store: every statement on connections (one merchant account each). Adding a connection
// (fetching the account, naming it) and tokens are api/connections.ts and api/tokens.ts; this module only reads
// and writes rows.
import { sql, type Updateable } from 'kysely';
import { idOf } from '../inputs.ts';
import type { Executor } from './index.ts';
import type { Connection, ConnectionsTable, NewConnection } from './schema.ts';

type Status = Connection['status'];

/**
 * By id (a number, or text that is an id: idOf) first, else by name. Text that is no id (a run of digits beyond
 * bigint, `-1`, `1e3`) is only a name: no such connection, rather than a value PostgreSQL refuses.
 */
export async function getConnection(db: Executor, idOrName: number | string): Promise<Connection | undefined> {
  const q = db.selectFrom('connections').selectAll();
  const id = typeof idOrName === 'number' ? idOrName : idOf(idOrName);
  const row = id !== undefined ? await q.where('id', '=', id).executeTakeFirst() : undefined;
  return row ?? (typeof idOrName === 'string' ? q.where('name', '=', idOrName).executeTakeFirst() : undefined);
}

/** The row locked for update (inside the caller's transaction). */
export async function getConnectionForUpdate(tx: Executor, id: number): Promise<Connection> {
  return tx.selectFrom('connections').selectAll().where('id', '=', id).forUpdate().executeTakeFirstOrThrow();
}

export async function connectionByName(db: Executor, name: string): Promise<Connection | undefined> {
  return db.selectFrom('connections').selectAll().where('name', '=', name).executeTakeFirst();
}

/** The first connection made for an account at a base URL. */
export async function connectionOfAccount(db: Executor, baseUrl: string, accountId: number): Promise<Connection | undefined> {
  return db
    .selectFrom('connections')
    .selectAll()
    .where('base_url', '=', baseUrl)
    .where('account_id', '=', accountId)
    .orderBy('id')
    .executeTakeFirst();
}

/** Every connection (or those with this status), by id or by name. */
export function listConnections(db: Executor, status?: Status, order: 'id' | 'name' = 'id'): Promise<Connection[]> {
  let q = db.selectFrom('connections').selectAll().orderBy(order);
  if (status) q = q.where('status', '=', status);
  return q.execute();
}

/** Connection names, sorted; of these names only (those that exist) when `among` is given. */
export async function connectionNames(db: Executor, among?: string[]): Promise<string[]> {
  if (among && !among.length) return [];
  let q = db.selectFrom('connections').select('name').orderBy('name');
  if (among) q = q.where('name', 'in', among);
  return (await q.execute()).map((r) => r.name);
}

/** Name by id of every connection. */
export async function connectionNamesById(db: Executor): Promise<Map<number, string>> {
  return new Map((await db.selectFrom('connections').select(['id', 'name']).execute()).map((c) => [c.id, c.name]));
}

/** The name of a connection; its id as text when it is gone. */
export async function connectionName(db: Executor, id: number): Promise<string> {
  const row = await db.selectFrom('connections').select('name').where('id', '=', id).executeTakeFirst();
  return row?.name ?? String(id);
}

export async function connectionStatus(db: Executor, id: number): Promise<Status | undefined> {
  const row = await db.selectFrom('connections').select('status').where('id', '=', id).executeTakeFirst();
  return row?.status;
}

/** The active connections whose webhook subscriptions were made once (their address is stored), by id. */
export async function subscribedConnectionIds(db: Executor): Promise<number[]> {
  const rows = await db
    .selectFrom('connections')
    .select('id')
    .where('status', '=', 'active')
    .where('webhook_address', 'is not', null)
    .orderBy('id')
    .execute();
  return rows.map((r) => r.id);
}

/** Where the connection's subscriptions deliver to; updated_at is left alone (not a change of the connection). */
/** Where a connection's subscriptions deliver, and the subscriptions the service has for it now (what a sync left). */
export async function setWebhooks(
  db: Executor,
  id: number,
  address: string,
  webhooks: { id: number; event: string; address: string }[],
): Promise<void> {
  await db
    .updateTable('connections')
    .set({ webhook_address: address, webhooks: JSON.stringify(webhooks), webhooks_read_at: sql`now()` })
    .where('id', '=', id)
    .execute();
}

/** Inserts a connection, or replaces the one of the same name with these values. */
export async function upsertConnection(db: Executor, values: NewConnection): Promise<Connection> {
  const { name: _name, ...update } = values;
  return db
    .insertInto('connections')
    .values(values)
    .onConflict((oc) => oc.column('name').doUpdateSet({ ...update, updated_at: sql<Date>`now()` }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateConnection(db: Executor, id: number, values: Updateable<ConnectionsTable>): Promise<Connection | undefined> {
  return db
    .updateTable('connections')
    .set({ ...values, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Sets the status (and its reason); `from` only changes a connection that still has that status. */
export async function setConnectionStatus(
  db: Executor,
  id: number,
  status: Status,
  reason: string | null,
  from?: Status,
): Promise<Connection | undefined> {
  let q = db.updateTable('connections').set({ status, status_reason: reason, updated_at: sql<Date>`now()` }).where('id', '=', id);
  if (from) q = q.where('status', '=', from);
  return q.returningAll().executeTakeFirst();
}

/** What the overview shows of each connection (or of one), by name. */
export function connectionSummaries(db: Executor, onlyId?: number) {
  let q = db.selectFrom('connections').select(['id', 'name', 'account_name', 'base_url', 'status', 'status_reason']).orderBy('name');
  if (onlyId !== undefined) q = q.where('id', '=', onlyId);
  return q.execute();
}
