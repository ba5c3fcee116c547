// Which account a connection's mirror was made from. A mirror applied to another account tells channels things that
// never happened there (an order of a reused id shipped and voided), so each worker process asks the service, before
// its queues start, which account each active connection reaches; one that answers for another account (same id,
// another creation time: restored, reset, or a sandbox started anew) stops as 'mismatched' before anything is sent,
// with an alert (src/alerts/conditions.ts), until `commerce-sync reset-mirror NAME` starts its mirror afresh.
import PQueue from 'p-queue';
import { decryptToken } from '../api/secrets.ts';
import { fetchAccount, otherAccount, type ClientDeps } from '../api/connections.ts';
import { connectionByName, listConnections, setConnectionStatus, updateConnection } from '../db/connections.ts';
import { forgetMirror } from '../db/mirror-reset.ts';
import { logSync } from '../db/synclog.ts';
import type { Connection } from '../db/schema.ts';
import type { Boss } from '../queue/boss.ts';
import { requestSweep } from '../queue/contracts.ts';

/** Accounts asked at once at start: with thousands of connections the check takes seconds, not minutes. */
const CHECKS_AT_ONCE = 16;

/**
 * Asks each active connection's account (GET /accounts/current, outside the budget as connecting does) and stops
 * those that answer for another account than their mirror's. A connection the service does not answer now is left
 * as it is: its requests meet the same answer and set its status. The names stopped.
 */
export async function checkAccounts(deps: ClientDeps): Promise<string[]> {
  const stopped: string[] = [];
  const queue = new PQueue({ concurrency: CHECKS_AT_ONCE });
  for (const c of await listConnections(deps.db, 'active')) {
    if (!c.access_token_enc || !c.raw) continue;
    void queue.add(async () => {
      let now: unknown;
      try {
        now = (await fetchAccount(c.base_url, decryptToken(deps.clients.key(deps.config), c.access_token_enc!), deps.config.API_TIMEOUT_MS))
          .raw;
      } catch (err) {
        deps.log.debug({ connection: c.name, err: (err as Error).message }, 'account not checked at start: the service did not answer');
        return;
      }
      const other = otherAccount(c.raw, now);
      if (other && (await stopMismatched(deps, c, other))) stopped.push(c.name);
    });
  }
  await queue.onIdle();
  return stopped;
}

async function stopMismatched(deps: ClientDeps, c: Connection, other: string): Promise<boolean> {
  const reason = `its service answers for another account than its mirror was made from (${other}); commerce-sync reset-mirror ${c.name} starts the mirror afresh`;
  const row = await setConnectionStatus(deps.db, c.id, 'mismatched', reason, 'active');
  if (!row) return false;
  await logSync(deps.db, { connectionId: c.id, action: 'connection.mismatched', detail: { account: other } });
  deps.log.error({ connection: c.name }, `connection stopped: ${reason}`);
  return true;
}

/**
 * Starts a connection's mirror afresh from the account its token reaches now: forgets what it mirrored
 * (src/db/mirror-reset.ts says what stays), takes the account as its own and makes it active, all in one
 * transaction, then asks for its first full sweep. Its webhooks are the caller's to register.
 */
export async function resetMirror(
  deps: ClientDeps & { boss: Boss },
  name: string,
): Promise<{ connection: Connection; deleted: Record<string, number> }> {
  const c = await connectionByName(deps.db, name);
  if (!c) throw new Error(`no connection named ${JSON.stringify(name)}; see commerce-sync connections`);
  if (!c.access_token_enc)
    throw new Error(`connection ${name} has no token: connect it again first (commerce-sync connect --name ${name})`);
  const account = await fetchAccount(
    c.base_url,
    decryptToken(deps.clients.key(deps.config), c.access_token_enc),
    deps.config.API_TIMEOUT_MS,
  );
  const { connection, deleted } = await deps.db.transaction().execute(async (tx) => {
    const deleted = await forgetMirror(tx, c.id);
    const connection = (await updateConnection(tx, c.id, {
      account_id: account.id,
      account_name: account.name,
      raw: JSON.stringify(account.raw),
      status: 'active',
      status_reason: null,
    }))!;
    await logSync(tx, { connectionId: c.id, action: 'connection.reset', detail: { deleted, was: c.status } });
    return { connection, deleted };
  });
  await requestSweep(deps.boss, c.id, true, { priority: 2 });
  deps.log.info({ connection: name, deleted }, 'mirror started afresh: its first full sweep is queued');
  return { connection, deleted };
}
