// The one way an operation enters the system (API and CLI): validate the input, pick the connection, store the
// operation with its job.
import { chooseConnection } from '../api/connections.ts';
import type { Db } from '../db/index.ts';
import type { PushKind, PushOperation } from '../db/schema.ts';
import { idOf } from '../inputs.ts';
import type { Boss } from '../queue/boss.ts';
import { parseInput } from './input.ts';
import { createOperation } from './store.ts';

/** How push names a connection: an id (idOf) is its id, anything else its name. */
export const connectionRef = (connection?: string | number | null) =>
  typeof connection === 'string' ? (idOf(connection) ?? connection) : connection;

export async function enqueueOperation(
  deps: { db: Db; boss: Boss },
  kind: PushKind,
  raw: unknown,
  connection?: string | number,
): Promise<PushOperation> {
  const input = parseInput(kind, raw);
  const conn = await chooseConnection(deps.db, connectionRef(connection));
  return createOperation(deps.db, deps.boss, { connectionId: conn.id, kind, input });
}
