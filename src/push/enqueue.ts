// The one way an operation enters the system (API and CLI): validate the input, pick the connection, store the
// operation with its job.
import { getConnection, listConnections } from '../api/connections.ts';
import type { Db } from '../db/index.ts';
import type { PushKind, PushOperation } from '../db/schema.ts';
import type { Boss } from '../queue/boss.ts';
import { parseInput } from './input.ts';
import { createOperation } from './store.ts';

export class ConnectionChoiceError extends Error {}

/** The named connection, or the only one there is. */
export async function chooseConnection(db: Db, connection?: string | number): Promise<{ id: number; name: string }> {
  if (connection !== undefined && connection !== '') {
    const row = await getConnection(db, typeof connection === 'string' && /^\d+$/.test(connection) ? Number(connection) : connection);
    if (!row) throw new ConnectionChoiceError(`no connection "${connection}" (see \`commerce-sync connections\`)`);
    return row;
  }
  const all = await listConnections(db);
  if (all.length === 1) return all[0]!;
  throw new ConnectionChoiceError(
    all.length
      ? `several connections exist (${all.map((c) => c.name).join(', ')}): say which one with "connection"`
      : 'no connection yet: connect an account first (`commerce-sync connect`)',
  );
}

export async function enqueueOperation(
  deps: { db: Db; boss: Boss },
  kind: PushKind,
  raw: unknown,
  connection?: string | number,
): Promise<PushOperation> {
  const input = parseInput(kind, raw);
  const conn = await chooseConnection(deps.db, connection);
  return createOperation(deps.db, deps.boss, { connectionId: conn.id, kind, input });
}
