// The audit log is append-only by rule of the database (migration 0310): no entry is changed, none deleted except
// by retention, and retention only takes entries past AUDIT_RETENTION_DAYS (and at least a day old).
import { sql } from 'kysely';
import t from 'tap';
import { loadConfig } from '../../src/config.ts';
import { insertAudit } from '../../src/db/audit.ts';
import { enforceRetention } from '../../src/sync/retention.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/db.ts';

const ago = (days: number) => new Date(Date.now() - days * 86_400_000);

t.test('entries are never changed; only retention deletes them, and only old ones', async (t) => {
  const { db } = await testDatabase(t);
  for (const [target, days] of [
    ['a year ago', 400],
    ['two days ago', 2],
    ['now', 0],
  ] as const)
    await insertAudit(db, { at: ago(days), actor: 'someone', role: 'admin', action: 'PATCH /api/x', source: 'api', target });
  const targets = async () => (await db.selectFrom('audit_log').select('target').orderBy('id').execute()).map((e) => e.target);
  const refused = /audit_log is append-only/;

  await t.rejects(db.updateTable('audit_log').set({ actor: 'someone else' }).execute(), refused, 'UPDATE is refused');
  await t.rejects(sql`UPDATE audit_log SET at = now() - interval '10 years'`.execute(db), refused, 'backdating too');
  await t.rejects(db.deleteFrom('audit_log').where('target', '=', 'now').execute(), refused, 'DELETE of a new entry is refused');
  await t.rejects(db.deleteFrom('audit_log').where('target', '=', 'a year ago').execute(), refused, 'and of an old one, outside retention');
  await t.rejects(sql`TRUNCATE audit_log`.execute(db), refused, 'TRUNCATE is refused');
  await t.rejects(
    db.transaction().execute(async (trx) => {
      await sql`SELECT set_config('commerce_sync.audit_cutoff', (now() + interval '1 day')::text, true)`.execute(trx);
      await trx.deleteFrom('audit_log').where('target', '=', 'now').execute();
    }),
    refused,
    "a cut-off that is not retention's cannot take the last day's entries",
  );
  t.same(await targets(), ['a year ago', 'two days ago', 'now'], 'every entry is still there, unchanged');
  t.same(
    (await db.selectFrom('audit_log').select('actor').distinct().execute()).map((e) => e.actor),
    ['someone'],
    'by whom they said',
  );

  const run = await enforceRetention(db, testConfig({ AUDIT_RETENTION_DAYS: 365 }));
  t.equal(run?.deleted.audit_log, 1, 'retention deletes the entry past AUDIT_RETENTION_DAYS');
  t.same(await targets(), ['two days ago', 'now']);
  await enforceRetention(db, testConfig({ AUDIT_RETENTION_DAYS: 1 }));
  t.same(await targets(), ['now'], 'at its shortest, a day');
  await t.rejects(db.deleteFrom('audit_log').execute(), refused, "retention's cut-off ended with its transaction");

  t.throws(
    () => loadConfig({ AUDIT_RETENTION_DAYS: '0.5' }),
    /^AUDIT_RETENTION_DAYS = "0.5" is not valid: expected a number of days from 1/,
    'AUDIT_RETENTION_DAYS below a day is refused',
  );
});
