// The evaluator: every ALERT_EVALUATE_SECONDS each worker process tries to evaluate; the one that takes the alerts
// lock (a transaction-scoped advisory lock: src/db/alerts.ts) runs every check and applies what they found, the
// others skip that round. A check that fails (a query error) leaves its alerts as they are rather than resolving them.
import { applyFindings, dropStaleNotices, inSavepoint, pruneAlerts, withAlertsLock, type Applied, type Finding } from '../db/alerts.ts';
import type { Db } from '../db/index.ts';
import { pruneRejections } from '../db/rejections.ts';
import type { WorkerDeps } from '../queue/handler.ts';
import { checkContext, checks as allChecks, type Check } from './conditions.ts';

export interface Evaluation extends Applied {
  /** Conditions whose checks ran. */
  evaluated: string[];
  failed: { conditions: string[]; error: string }[];
}

/** Resolved alerts are kept this long; refusal counts a day. */
const ALERT_RETENTION_DAYS = 30;
const REJECTION_RETENTION_HOURS = 24;
/** Notices about what happened longer ago than this are not sent (see dropStaleNotices). */
export const NOTICE_MAX_AGE_HOURS = 24;

/** One evaluation; undefined when another process holds the alerts lock (it is evaluating now). */
export async function evaluateAlerts(
  deps: Pick<WorkerDeps, 'db' | 'config' | 'log'>,
  opts: { checks?: Check[] } = {},
): Promise<Evaluation | undefined> {
  const { config, log } = deps;
  return withAlertsLock(deps.db, async (tx) => {
    const db = tx as Db;
    const ctx = await checkContext(db, config);
    const findings: Finding[] = [];
    const out: Evaluation = { opened: [], reopened: [], resolved: [], evaluated: [], failed: [] };
    for (const check of opts.checks ?? allChecks) {
      // A savepoint each: a failing statement must not abort the transaction the others' findings are applied in.
      try {
        const found = await inSavepoint(db, () => check.run(ctx));
        findings.push(...found);
        out.evaluated.push(...check.conditions);
      } catch (err) {
        out.failed.push({ conditions: check.conditions, error: (err as Error).message });
        log.warn(
          { err: { message: (err as Error).message }, conditions: check.conditions },
          'an alert check failed; its alerts stay as they are',
        );
      }
    }
    Object.assign(out, await applyFindings(db, findings, out.evaluated, config.ALERT_QUIET_SECONDS));
    for (const key of out.opened) {
      const f = findings.find((x) => x.key === key)!;
      log.warn({ alert: key, severity: f.severity }, `alert opened: ${f.message}`);
    }
    for (const key of out.reopened) log.warn({ alert: key }, 'alert reopened within the quiet period (nothing sent)');
    for (const key of out.resolved) log.info({ alert: key }, 'alert resolved');
    return out;
  });
}

/** Housekeeping of the alert tables: old resolved alerts, old refusal counts, notices too old to send. */
export async function pruneAlertTables(db: Db): Promise<void> {
  await pruneAlerts(db, ALERT_RETENTION_DAYS);
  await pruneRejections(db, REJECTION_RETENTION_HOURS);
  await dropStaleNotices(db, NOTICE_MAX_AGE_HOURS);
}
