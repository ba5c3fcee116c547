// Alert notices to ALERT_WEBHOOK_URL: one when an alert opens, one when it resolves, each claimed by one process
// (src/db/alerts.ts claimNotice), sent through the one signed sender (src/channels/sender.ts), then marked sent. A send
// that fails waits and is tried again with backoff (30 s doubling, at most 30 minutes), with the same webhook-id.
//
// No storm: an opening goes once per alert; a resolution goes once the alert has stayed resolved for
// ALERT_QUIET_SECONDS, and a condition back within that reopens the same alert, so a flapping condition sends one
// opening and, once it settles, one resolution. At most MAX_PER_ROUND notices go per evaluation round.
import type { Config } from '../config.ts';
import { claimNotice, markNotified, markNotifyFailed, type AlertView, type Notice } from '../db/alerts.ts';
import type { Db } from '../db/index.ts';
import type { Logger } from '../log.ts';
import { metrics } from '../metrics.ts';
import { parseAllowedHosts } from '../channels/address-guard.ts';
import { hostOf, isSlackUrl, parseSecrets, sendWebhook, type SendPolicy } from '../channels/sender.ts';

/** Notices sent per round at most: the rest wait for the next round. */
const MAX_PER_ROUND = 20;
/** How long a claim lasts: longer than a send with its retries can take. */
const LEASE_SECONDS = 120;

export type AlertFormat = 'standard' | 'slack';

export function alertFormat(config: Pick<Config, 'ALERT_WEBHOOK_FORMAT' | 'ALERT_WEBHOOK_URL'>): AlertFormat {
  if (config.ALERT_WEBHOOK_FORMAT === 'auto') return isSlackUrl(config.ALERT_WEBHOOK_URL) ? 'slack' : 'standard';
  return config.ALERT_WEBHOOK_FORMAT;
}

/** The JSON event of a notice (Standard Webhooks' `type`, `timestamp`, `data`). */
export function noticeEvent(n: Notice, at = new Date()): Record<string, unknown> {
  const a = n.alert;
  return {
    type: `alert.${n.kind}`,
    timestamp: at.toISOString(),
    data: {
      id: a.id,
      key: a.key,
      condition: a.condition,
      connection: a.connection,
      severity: a.severity,
      state: a.resolved_at ? 'resolved' : 'open',
      message: a.message,
      count: Number(a.count),
      opened_at: new Date(a.opened_at).toISOString(),
      resolved_at: a.resolved_at ? new Date(a.resolved_at).toISOString() : null,
      reopened: a.reopened,
    },
  };
}

/** Slack's mrkdwn gives &, < and > a meaning: escaped, so a message shows as written. */
const slackEscape = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/** The Slack-compatible incoming-webhook message of a notice. */
export function slackMessage(n: Notice): { text: string } {
  const a: AlertView = n.alert;
  const where = a.connection ? ` [${a.connection}]` : '';
  if (n.kind === 'opened') return { text: `:rotating_light: commerce-sync alert (${a.severity})${where}: ${slackEscape(a.message)}` };
  const minutes = Math.max(1, Math.round((new Date(a.resolved_at!).getTime() - new Date(a.opened_at).getTime()) / 60_000));
  return { text: `:white_check_mark: commerce-sync resolved${where} after ${minutes} min: ${slackEscape(a.message)}` };
}

/** The webhook-id of a notice: the same on every attempt, so a receiver can drop a repeat. */
export const noticeId = (n: Notice) => `alert-${n.alert.id}-${n.kind}`;

export interface NotifyDeps {
  db: Db;
  config: Config;
  log: Logger;
  /** The sender's policy (tests shorten it). */
  policy?: SendPolicy;
}

/** Sends the notices due now; returns how many went. Nothing without ALERT_WEBHOOK_URL. */
export async function sendDueNotices(deps: NotifyDeps): Promise<number> {
  const { db, config, log } = deps;
  if (!config.ALERT_WEBHOOK_URL) return 0;
  const format = alertFormat(config);
  const secrets = format === 'standard' ? parseSecrets(config.ALERT_WEBHOOK_SECRET) : [];
  let sent = 0;
  for (let i = 0; i < MAX_PER_ROUND; i++) {
    const n = await claimNotice(db, { quietSeconds: config.ALERT_QUIET_SECONDS, leaseSeconds: LEASE_SECONDS });
    if (!n) break;
    const body = JSON.stringify(format === 'slack' ? slackMessage(n) : noticeEvent(n));
    const out = await sendWebhook(
      { url: config.ALERT_WEBHOOK_URL, id: noticeId(n), body, secrets },
      { timeoutMs: 10_000, attempts: 3, ...deps.policy, allowHosts: parseAllowedHosts(config.OUTBOUND_ALLOWED_HOSTS) },
    );
    metrics.alertNotifications.inc({ kind: n.kind, result: out.ok ? 'sent' : 'failed' });
    if (out.ok) {
      await markNotified(db, n.alert.id, n.kind);
      log.info({ alert: n.alert.key, kind: n.kind, to: hostOf(config.ALERT_WEBHOOK_URL) }, 'alert notice sent');
      sent++;
    } else {
      const retryIn = Math.min(1800, 30 * 2 ** Math.min(n.alert.notify_attempts, 6));
      await markNotifyFailed(db, n.alert.id, out.error ?? 'failed', retryIn);
      log.warn(
        { alert: n.alert.key, kind: n.kind, to: hostOf(config.ALERT_WEBHOOK_URL), error: out.error, retryInSeconds: retryIn },
        'alert notice not delivered to ALERT_WEBHOOK_URL; trying again later',
      );
      // The URL is failing: the other notices wait for the next round rather than each time out now.
      break;
    }
  }
  return sent;
}
