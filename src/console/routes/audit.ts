// The audit trail: its page (filters, newest first) and its export, GET /api/audit?since=CURSOR (oldest first,
// with the cursor to ask after next). Entries: src/console/audit.ts.
import type Router from '@koa/router';
import { listAudit, type AuditEntry } from '../../db/audit.ts';
import { idOf, isId } from '../../inputs.ts';
import { problem } from '../../server.ts';
import { auditPage } from '../pages/audit.ts';
import { connectionNames, flatQuery, page, pageContext, type ConsoleDeps } from '../web.ts';
import { z } from 'zod';
import { documented, timestamp } from '../../openapi/registry.ts';

const PAGE_SIZE = 100;
const EXPORT_LIMIT = 1000;

/** An entry as the API and the CLI show it. */
export const presentAudit = (e: AuditEntry) => ({
  id: e.id,
  at: new Date(e.at).toISOString(),
  actor: e.actor,
  role: e.role,
  action: e.action,
  connection: e.connection,
  target: e.target,
  before: e.before,
  after: e.after,
  from: e.address ? `${e.source} ${e.address}` : e.source,
});

/** An entry as presentAudit shows it; before and after are whatever the change recorded. */
const auditEntry = z
  .object({
    id: z.number().int(),
    at: timestamp,
    actor: z.string(),
    role: z.string(),
    action: z.string(),
    connection: z.string().nullable(),
    target: z.string().nullable(),
    before: z.unknown().describe('What the change replaced, as recorded (secrets redacted).'),
    after: z.unknown().describe('What the change made, as recorded (secrets redacted).'),
    from: z.string().describe('console, api or cli, and the client address when known.'),
  })
  .meta({ id: 'AuditEntry' });

export function auditRoutes(r: Router, deps: ConsoleDeps): void {
  const { db } = deps;
  const api = documented(r);

  api.page.get('/audit', { role: 'viewer' }, async (ctx) => {
    const q = flatQuery(ctx);
    const rows = await listAudit(db, {
      actor: q.actor || undefined,
      action: q.action || undefined,
      connection: q.connection || undefined,
      before: idOf(q.before),
      limit: PAGE_SIZE,
    });
    const last = rows[rows.length - 1];
    const older =
      rows.length === PAGE_SIZE && last
        ? `/audit?${new URLSearchParams({ ...Object.fromEntries(Object.entries(q).filter(([k, v]) => v && k !== 'before')), before: String(last.id) })}`
        : null;
    page(ctx, auditPage(pageContext(deps, ctx), { rows, connections: await connectionNames(db), query: q, older }));
  });

  api.get(
    '/api/audit',
    {
      role: 'viewer',
      summary: 'The audit trail, oldest first after a cursor (an export)',
      query: z.object({
        since: z.string().optional().describe('Entries after this id (0, the default: from the first).'),
        limit: z.string().optional().describe(`1 to ${EXPORT_LIMIT} (the default).`),
        actor: z.string().optional(),
        action: z.string().optional(),
        connection: z.string().optional().describe('Connection name.'),
      }),
      answers: {
        200: z.object({ entries: z.array(auditEntry), cursor: z.number().int().describe('The `since` to ask with next.') }),
      },
      problems: [400],
    },
    async (ctx) => {
      const q = flatQuery(ctx);
      const since = q.since ?? '0';
      const limit = q.limit ?? String(EXPORT_LIMIT);
      if (!isId(since) || !isId(limit) || Number(limit) < 1 || Number(limit) > EXPORT_LIMIT)
        return problem(ctx, 400, `since must be an entry id (0 for everything) and limit a whole number from 1 to ${EXPORT_LIMIT}`);
      const rows = await listAudit(db, {
        since: Number(since),
        actor: q.actor || undefined,
        action: q.action || undefined,
        connection: q.connection || undefined,
        limit: Number(limit),
      });
      ctx.body = { entries: rows.map(presentAudit), cursor: rows.length ? Number(rows[rows.length - 1]!.id) : Number(since) };
    },
  );
}
