// `commerce-sync logs` and `commerce-sync status`: the console's answers in a terminal. Both open the
// database like every command (the embedded PostgreSQL of a running `start` is reused), but make none: on a
// database never set up they say there is nothing yet.
import { listAudit } from '../db/audit.ts';
import { idOf } from '../inputs.ts';
import { presentAudit } from './routes/audit.ts';
import { callApi } from './tokens-cli.ts';
import type { CommandContext, CommandModule } from '../command.ts';
import { formatTable, sharedOptions, stringOption, UsageError } from '../command.ts';
import { openDatabase, withDatabase } from '../db/index.ts';
import { documentsLag, overview, STOCK_LAG, type ConnectionOverview } from './overview.ts';
import type { QueueDepth } from '../queue/depths.ts';
import { FilterError, parseLogFilter, querySyncLog, type LogRow } from './synclog.ts';
import { SyncLogTail } from './tail.ts';
import { lastWebhookRepairs } from '../db/synclog.ts';
import type { AlertView } from '../db/alerts.ts';
import { untilStopped } from '../shutdown.ts';

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** `1h`, `30m`, `2d` or an ISO timestamp. */
export function parseSince(v: string, now = Date.now()): Date {
  const m = /^(\d+)([smhd])$/.exec(v);
  if (m) return new Date(now - Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2] as 's' | 'm' | 'h' | 'd'] * 1000);
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) throw new UsageError(`--since ${v}: give a duration like 30m, 2h, 1d or an ISO timestamp`);
  return d;
}

const show = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

export function formatLogLine(r: LogRow): string {
  const what = [r.resource, r.record_id !== null ? `#${r.record_id}` : ''].join('');
  const change = r.before !== null || r.after !== null ? ` ${show(r.before) || '-'} -> ${show(r.after) || '-'}` : '';
  return (
    [
      new Date(r.at).toISOString().replace('T', ' ').slice(0, 23),
      r.connection ?? '-',
      r.outcome.padEnd(7),
      r.action,
      what || undefined,
      r.sku ? `sku=${r.sku}` : undefined,
    ]
      .filter(Boolean)
      .join('  ') +
    change +
    (r.duration_ms !== null ? ` (${r.duration_ms} ms)` : '') +
    (r.error ? `  error: ${r.error}` : '') +
    (r.request_id ? `  request=${r.request_id}` : '') +
    (r.delivery_id ? `  delivery=${r.delivery_id}` : '')
  );
}

async function logs(ctx: CommandContext): Promise<number> {
  const v = ctx.values;
  const limitRaw = str(v.limit) ?? '50';
  if (!/^\d+$/.test(limitRaw) || Number(limitRaw) < 1) throw new UsageError('--limit takes a positive whole number');
  const database = await openDatabase(ctx.config, ctx.log, { poolSize: 3, existing: true });
  try {
    let filter;
    try {
      filter = await parseLogFilter(database.db, {
        connection: str(v.connection),
        sku: str(v.sku),
        resource: str(v.resource),
        outcome: str(v.outcome),
        record: str(v.record),
      });
    } catch (err) {
      if (err instanceof FilterError) throw new UsageError(err.message);
      throw err;
    }
    if (str(v.since)) filter.from = parseSince(str(v.since)!);
    const print = (r: LogRow) => ctx.out(v.json ? JSON.stringify(r) : formatLogLine(r));
    const follow = v.follow === true;
    // The tail listens before the history is read, so nothing written in between is lost.
    const tail = follow ? new SyncLogTail(database.url, database.db, ctx.log) : null;
    const early: LogRow[] = [];
    let history = true;
    const unsubscribe = tail?.subscribe(filter, (r) => {
      if (history) early.push(r);
      else print(r);
    });
    await tail?.start();
    const rows = (await querySyncLog(database.db, { ...filter, limit: Number(limitRaw) })).reverse();
    for (const r of rows) print(r);
    const seen = new Set(rows.map((r) => r.id));
    history = false;
    for (const r of early) if (!seen.has(r.id)) print(r);
    if (!tail) return 0;
    await untilStopped();
    unsubscribe?.();
    await tail.stop();
    return 0;
  } finally {
    await database.close();
  }
}

const ago = (d: Date | null) => (d ? `${Math.max(0, Math.round((Date.now() - new Date(d).getTime()) / 1000))} s ago` : 'never');

/** Open alerts, one line each: severity, key, since when, the message (naming the setting or action). */
export function formatAlerts(alerts: AlertView[]): string[] {
  if (!alerts.length) return ['alerts: none open'];
  const lines = [`alerts: ${alerts.length} open`];
  for (const a of alerts)
    lines.push(
      `  ${a.severity.toUpperCase()} ${a.key} since ${new Date(a.opened_at).toISOString().replace('T', ' ').slice(0, 19)} UTC: ${a.message}`,
    );
  return lines;
}

export function formatStatus(conns: ConnectionOverview[], queues: QueueDepth[]): string[] {
  const lines: string[] = [];
  if (!conns.length) lines.push('No connections. Add one with `commerce-sync connect`, or run `commerce-sync start` for the demo.');
  for (const c of conns) {
    lines.push(
      `${c.name}${c.accountName ? ` (${c.accountName})` : ''}: ${c.health.toUpperCase()}, connection ${c.status}${c.statusReason ? ` (${c.statusReason})` : ''}`,
    );
    lines.push(
      `  deliveries  ${c.deliveriesPerMinute}/min over 5 min, ${c.deliveriesLastHour} in the last hour; ${c.queuedDeliveries} queued, ${c.failedDeliveries} failed`,
    );
    lines.push(`  ${STOCK_LAG}: ${c.stockLagSeconds} s, the oldest change of stock not yet in the mirror (what channels are told)`);
    lines.push(`  ${documentsLag(c.documentsWindowSeconds)}: ${c.documentsLagSeconds} s`);
    lines.push(
      `  budget      ${c.budget ? `${c.budget.remaining} of ${c.budget.limit} requests left, window resets ${c.budget.resetAt.toISOString()}` : 'no request made yet'}`,
    );
    lines.push(
      `  last sweep  ${ago(c.lastSweepAt)}${c.lastSweepAt ? `, drift found ${c.lastDrift}` : ''}; full sweep ${ago(c.lastFullSweepAt)}`,
    );
    for (const d of c.destinations)
      lines.push(
        `  channel     ${d.channel} -> ${d.host}: ${d.state}${d.behind ? `, ${d.behind} changes behind, lag ${d.lagSeconds} s` : ''}` +
          (d.failingSince ? `, failing since ${new Date(d.failingSince).toISOString()} (${d.failures} POSTs, last ${d.lastError})` : '') +
          (d.pausedReason ? `; paused: ${d.pausedReason}` : ''),
      );
    lines.push(
      `  errors      ${c.errorsLastHour} in the last hour${c.recentErrors[0] ? `; latest: ${c.recentErrors[0].action}: ${c.recentErrors[0].error ?? ''}` : ''}`,
    );
  }
  const width = Math.max(...queues.map((q) => q.queue.length));
  lines.push('queues (waiting / active / failed retained):');
  for (const q of queues) lines.push(`  ${q.queue.padEnd(width)}  ${q.queued} / ${q.active} / ${q.failed}`);
  return lines;
}

async function status(ctx: CommandContext): Promise<number> {
  const database = await openDatabase(ctx.config, ctx.log, { poolSize: 3, existing: true });
  try {
    const o = await overview(database.db);
    if (ctx.values.json) ctx.out(JSON.stringify(o, null, 2));
    else for (const line of [...formatAlerts(o.alerts), ...formatStatus(o.connections, o.queues)]) ctx.out(line);
    // Webhook subscriptions the scheduled check had to recreate (the service deletes them after 3 days of failures).
    if (!ctx.values.json) {
      const repairs = await lastWebhookRepairs(database.db);
      for (const c of o.connections) {
        const r = repairs.get(c.id);
        if (r)
          ctx.out(
            `${c.name}: webhooks repaired ${ago(r.at)}: recreated ${(r.detail?.created ?? []).join(', ') || 'none'}; removed ${(r.detail?.removed ?? []).join(', ') || 'none'}`,
          );
      }
    }
    // Exit 1 when something needs a person (an open alert above all): scripts and monitors can use `status` as a check.
    return o.alerts.length > 0 ||
      o.connections.some((c) => c.health !== 'ok' || c.destinations.some((d) => d.state === 'paused' || d.state === 'failing')) ||
      o.queues.some((q) => q.queue.endsWith('-dead') && q.queued > 0)
      ? 1
      : 0;
  } finally {
    await database.close();
  }
}

/** commerce-sync audit: who changed what, oldest first after --since (the export's cursor), else the newest. */
async function audit(ctx: CommandContext): Promise<number> {
  const since = ctx.values.since === undefined ? undefined : idOf(ctx.values.since);
  if (ctx.values.since !== undefined && since === undefined) throw new UsageError('--since takes an entry id');
  const limitRaw = ctx.values.limit === undefined ? '50' : String(ctx.values.limit);
  if (!/^\d+$/.test(limitRaw) || Number(limitRaw) < 1 || Number(limitRaw) > 1000) throw new UsageError('--limit takes 1 to 1000');
  if (typeof ctx.values.url === 'string') {
    // Through a console's API with a personal token: its role decides, as for any request.
    const q = new URLSearchParams({ since: String(since ?? 0), limit: limitRaw });
    for (const k of ['actor', 'action', 'connection']) if (typeof ctx.values[k] === 'string') q.set(k, ctx.values[k] as string);
    const r = await callApi<{ entries: unknown[] }>(ctx, 'GET', `/api/audit?${q}`);
    if (r.status >= 400) {
      process.stderr.write(`commerce-sync audit: ${r.status} ${r.body.error ?? ''}\n`);
      return 1;
    }
    for (const e of r.body.entries) ctx.out(JSON.stringify(e));
    return 0;
  }
  return withDatabase(ctx, async ({ db }) => {
    const rows = await listAudit(db, {
      since,
      actor: typeof ctx.values.actor === 'string' ? ctx.values.actor : undefined,
      action: typeof ctx.values.action === 'string' ? ctx.values.action : undefined,
      connection: typeof ctx.values.connection === 'string' ? ctx.values.connection : undefined,
      limit: Number(limitRaw),
    });
    const entries = (since === undefined ? [...rows].reverse() : rows).map(presentAudit);
    if (ctx.values.json) for (const e of entries) ctx.out(JSON.stringify(e));
    else if (!entries.length) ctx.out('no audit entries match');
    else
      for (const line of formatTable([
        ['ID', 'AT (UTC)', 'WHO', 'ROLE', 'ACTION', 'CONNECTION', 'TARGET', 'FROM'],
        ...entries.map((e) => [
          String(e.id),
          e.at.slice(0, 19).replace('T', ' '),
          e.actor,
          e.role,
          e.action,
          e.connection ?? '-',
          e.target ?? '-',
          e.from,
        ]),
      ]))
        ctx.out(line);
    return 0;
  });
}

export const commands: CommandModule['commands'] = {
  audit: {
    summary: 'Who changed what (console, API, CLI), with the values before and after (--json); newest last.',
    options: {
      since: stringOption('i', 'ID', 'entries after this id, oldest first (an export: go on from the last id)'),
      actor: stringOption('a', 'WHO', 'only this actor'),
      action: stringOption('A', 'TEXT', 'only actions containing this, e.g. PATCH, channels, void'),
      connection: sharedOptions.connection('only changes of this connection'),
      limit: sharedOptions.limit('how many (default 50, at most 1000)'),
      json: { type: 'boolean', description: 'one JSON object per line, as GET /api/audit answers them' },
      url: { type: 'string', value: 'URL', description: "read through this console's API with OPERATOR_API_TOKEN (oldest first, JSON)" },
    },
    run: audit,
  },
  logs: {
    summary: 'Show the sync log, newest last; --follow keeps printing new entries as they are written.',
    options: {
      follow: { type: 'boolean', short: 'f', description: 'keep following new entries (Ctrl-C stops)' },
      connection: sharedOptions.connection('only this connection (name or id)'),
      sku: { type: 'string', short: 's', value: 'SKU', description: 'only entries about this SKU' },
      resource: { type: 'string', value: 'NAME', description: 'only this resource, e.g. variant, order' },
      outcome: { type: 'string', value: 'OUTCOME', description: 'only ok, skipped, error or warning' },
      record: { type: 'string', value: 'ID', description: 'only entries about this record id' },
      since: { type: 'string', value: 'WHEN', description: 'entries since a duration ago (30m, 2h, 1d) or an ISO time' },
      limit: sharedOptions.limit('how many past entries to show first (default 50)'),
      json: { type: 'boolean', description: 'one JSON object per line' },
    },
    run: logs,
  },
  status: {
    summary:
      'Open alerts, then per connection: health, stock lag and documents lag, API budget left, last sweep and drift, errors; queue depths. ' +
      'Exits 1 while an alert is open, a connection is not healthy or dead letters wait.',
    options: { json: { type: 'boolean', description: 'print what GET /api/overview answers, as JSON' } },
    run: status,
  },
};
