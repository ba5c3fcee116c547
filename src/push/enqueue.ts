// The one way an operation enters the system (API and CLI): validate the input, pick the connection, store the
// operation with its job.
import { chooseConnection, ConnectionChoiceError } from '../api/connections.ts';
import { getConnection } from '../db/connections.ts';
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
  // Its ids would be another account's (src/sync/account.ts): nothing is queued, nor held for a channel, until reset.
  const row = await getConnection(deps.db, conn.id);
  if (row?.status === 'mismatched') throw new ConnectionChoiceError(400, `connection ${conn.name} is stopped: ${row.status_reason}`);
  return createOperation(deps.db, deps.boss, { connectionId: conn.id, kind, input });
}
