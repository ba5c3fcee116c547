// The alerts store: every statement on alerts (migration 0120). What opens and resolves an alert, and what is sent,
// is src/alerts/; this module only reads and writes rows. At most one open alert per key (a partial unique index);
// the evaluator applies its findings under a transaction-scoped advisory lock, so two workers never race on a key.
import { sql, type Selectable } from 'kysely';
import type { Executor } from './index.ts';
import type { AlertSeverity, AlertsTable } from './schema.ts';

export type AlertRow = Selectable<AlertsTable>;

/** An alert as the console, the API and `status` show it. */
export type AlertView = AlertRow & { connection: string | null };

/** A condition that holds now: the evaluator's finding for one key. */
export interface Finding {
  key: string;
  condition: string;
  connectionId: number | null;
  severity: AlertSeverity;
  message: string;
  count: number;
}

/** The lock the evaluator holds while it applies findings (one evaluation at a time across processes). */
const ALERTS_LOCK = 727_120;

/**
 * Runs `fn` in a transaction holding the alerts lock; returns undefined at once (fn not run) when another process
 * holds it: that process is evaluating right now, and this one's evaluation would find the same.
 */
export async function withAlertsLock<T>(db: Executor, fn: (tx: Executor) => Promise<T>): Promise<T | undefined> {
  return db.transaction().execute(async (tx) => {
    const got = await sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${ALERTS_LOCK}) AS ok`.execute(tx);
    if (!got.rows[0]?.ok) return undefined;
    return fn(tx);
  });
}

/** Runs `fn` inside a savepoint of the caller's transaction: a statement failing in it leaves the transaction usable. */
export async function inSavepoint<T>(tx: Executor, fn: () => Promise<T>): Promise<T> {
  await sql`SAVEPOINT alert_check`.execute(tx);
  try {
    const out = await fn();
    await sql`RELEASE SAVEPOINT alert_check`.execute(tx);
    return out;
  } catch (err) {
    await sql`ROLLBACK TO SAVEPOINT alert_check`.execute(tx);
    throw err;
  }
}

export interface Applied {
  opened: string[];
  reopened: string[];
  resolved: string[];
}

/**
 * Makes the alerts say what `findings` found, for the conditions in `evaluated` (those whose check ran; an alert of
 * a condition whose check failed is left as it is). A finding with an open alert updates its message and count; one
 * whose key resolved less than `quietSeconds` ago reopens that alert (nothing new is sent); otherwise it opens a new
 * alert. An open alert of an evaluated condition with no finding resolves.
 */
export async function applyFindings(tx: Executor, findings: Finding[], evaluated: string[], quietSeconds: number): Promise<Applied> {
  const out: Applied = { opened: [], reopened: [], resolved: [] };
  const open = await tx.selectFrom('alerts').selectAll().where('resolved_at', 'is', null).forUpdate().execute();
  const openByKey = new Map(open.map((a) => [a.key, a]));
  const found = new Set<string>();
  for (const f of findings) {
    if (found.has(f.key)) continue;
    found.add(f.key);
    const now = openByKey.get(f.key);
    if (now) {
      if (now.message !== f.message || Number(now.count) !== f.count || now.severity !== f.severity)
        await tx
          .updateTable('alerts')
          .set({ message: f.message, count: f.count, severity: f.severity, updated_at: sql`now()` })
          .where('id', '=', now.id)
          .execute();
      continue;
    }
    const recent = await tx
      .selectFrom('alerts')
      .select('id')
      .where('key', '=', f.key)
      .where('resolved_at', '>', sql<Date>`now() - make_interval(secs => ${quietSeconds})`)
      .where('notified_resolved_at', 'is', null)
      .orderBy('resolved_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (recent) {
      await tx
        .updateTable('alerts')
        .set((eb) => ({
          resolved_at: null,
          reopened: eb('reopened', '+', 1),
          message: f.message,
          count: f.count,
          severity: f.severity,
          updated_at: sql`now()`,
        }))
        .where('id', '=', recent.id)
        .execute();
      out.reopened.push(f.key);
      continue;
    }
    await tx
      .insertInto('alerts')
      .values({
        key: f.key,
        condition: f.condition,
        connection_id: f.connectionId,
        severity: f.severity,
        message: f.message,
        count: f.count,
      })
      .execute();
    out.opened.push(f.key);
  }
  const ended = open.filter((a) => !found.has(a.key) && evaluated.includes(a.condition));
  if (ended.length) {
    await tx
      .updateTable('alerts')
      .set({ resolved_at: sql`now()`, updated_at: sql`now()` })
      .where(
        'id',
        'in',
        ended.map((a) => a.id),
      )
      .execute();
    out.resolved.push(...ended.map((a) => a.key));
  }
  return out;
}

const withConnection = (db: Executor) =>
  db.selectFrom('alerts as a').leftJoin('connections as c', 'c.id', 'a.connection_id').selectAll('a').select('c.name as connection');

/** Open alerts, critical first, oldest first. */
export async function openAlerts(db: Executor): Promise<AlertView[]> {
  return withConnection(db)
    .where('a.resolved_at', 'is', null)
    .orderBy(sql`a.severity = 'critical'`, 'desc')
    .orderBy('a.opened_at')
    .execute();
}

/** Alerts opened or resolved within the last `hours`, newest first (at most `limit`). */
export async function recentAlerts(db: Executor, hours: number, limit = 100): Promise<AlertView[]> {
  return withConnection(db)
    .where((eb) =>
      eb.or([
        eb('a.resolved_at', 'is', null),
        eb('a.resolved_at', '>', sql<Date>`now() - make_interval(hours => ${hours})`),
        eb('a.opened_at', '>', sql<Date>`now() - make_interval(hours => ${hours})`),
      ]),
    )
    .orderBy('a.opened_at', 'desc')
    .limit(limit)
    .execute();
}

/** Open alerts per condition and severity (the commerce_sync_alerts_open gauge). */
export async function openAlertCounts(db: Executor): Promise<{ condition: string; severity: string; n: number }[]> {
  const rows = await db
    .selectFrom('alerts')
    .select(['condition', 'severity', sql<number>`count(*)::int`.as('n')])
    .where('resolved_at', 'is', null)
    .groupBy(['condition', 'severity'])
    .execute();
  return rows.map((r) => ({ ...r, n: Number(r.n) }));
}

export type NoticeKind = 'opened' | 'resolved';

export interface Notice {
  kind: NoticeKind;
  alert: AlertView;
}

/**
 * Claims the next notice due, for `leaseSeconds`: an opening not yet sent, or a resolution not yet sent once the
 * alert has stayed resolved for `quietSeconds` (a condition coming back within that reopens the alert instead, and
 * neither a resolution nor a new opening goes out). A resolution goes only after its opening. Notices waiting for a
 * retry (notify_next_at) and notices claimed by another process are skipped. The claim commits before the send, so
 * no other process sends it meanwhile; a process that dies mid-send leaves the claim to expire, and the notice
 * goes again with the same webhook-id.
 */
export async function claimNotice(db: Executor, opts: { quietSeconds: number; leaseSeconds: number }): Promise<Notice | undefined> {
  const r = await sql<{ id: number; kind: NoticeKind }>`
    UPDATE alerts a SET notify_claimed_until = now() + make_interval(secs => ${opts.leaseSeconds})
    FROM (
      SELECT id, CASE WHEN notified_open_at IS NULL THEN 'opened' ELSE 'resolved' END AS kind FROM alerts
      WHERE (notified_open_at IS NULL
             OR (notified_resolved_at IS NULL AND resolved_at < now() - make_interval(secs => ${opts.quietSeconds})))
        AND (notify_next_at IS NULL OR notify_next_at <= now())
        AND (notify_claimed_until IS NULL OR notify_claimed_until < now())
      ORDER BY coalesce(notified_open_at, opened_at), id
      LIMIT 1 FOR UPDATE SKIP LOCKED
    ) due
    WHERE a.id = due.id
    RETURNING a.id, due.kind`.execute(db);
  const row = r.rows[0];
  if (!row) return undefined;
  const alert = await withConnection(db).where('a.id', '=', row.id).executeTakeFirstOrThrow();
  return { kind: row.kind, alert };
}

/** The notice went out: it is never sent again. */
export async function markNotified(db: Executor, id: number, kind: NoticeKind): Promise<void> {
  await db
    .updateTable('alerts')
    .set({
      ...(kind === 'opened' ? { notified_open_at: sql`now()` } : { notified_resolved_at: sql`now()` }),
      notify_attempts: 0,
      notify_next_at: null,
      notify_claimed_until: null,
      notify_error: null,
    })
    .where('id', '=', id)
    .execute();
}

/** The send failed: try again after `retryInSeconds`, saying why. */
export async function markNotifyFailed(db: Executor, id: number, error: string, retryInSeconds: number): Promise<void> {
  await db
    .updateTable('alerts')
    .set((eb) => ({
      notify_attempts: eb('notify_attempts', '+', 1),
      notify_next_at: sql`now() + make_interval(secs => ${retryInSeconds})`,
      notify_claimed_until: null,
      notify_error: error.slice(0, 500),
    }))
    .where('id', '=', id)
    .execute();
}

/**
 * Notices about what happened longer ago than `hours` are not sent any more (a URL configured after a month of
 * alerts, or one that was down for a day, must not bring the whole backlog at once): they are marked as not sent.
 */
export async function dropStaleNotices(db: Executor, hours: number): Promise<number> {
  const r = await sql`
    UPDATE alerts SET
      notified_open_at = coalesce(notified_open_at, 'epoch'::timestamptz),
      notified_resolved_at = CASE WHEN resolved_at IS NOT NULL THEN coalesce(notified_resolved_at, 'epoch'::timestamptz) END,
      notify_error = 'not sent: older than ' || ${hours} || ' hours'
    WHERE (notified_open_at IS NULL AND opened_at < now() - make_interval(hours => ${hours}))
       OR (notified_resolved_at IS NULL AND resolved_at < now() - make_interval(hours => ${hours}))`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** Deletes resolved alerts older than `days`. */
export async function pruneAlerts(db: Executor, days: number): Promise<number> {
  const r = await db.deleteFrom('alerts').where('resolved_at', '<', sql<Date>`now() - make_interval(days => ${days})`).executeTakeFirst();
  return Number(r.numDeletedRows ?? 0);
}
