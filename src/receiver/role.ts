// The receiver role: POST /webhooks/:connection on the shared server (no operator auth: deliveries are
// authenticated by their signature), its own small pool so workers cannot starve acknowledgements, and
// webhook subscription sync for every active connection once the public URL is known.
import { listConnections } from '../db/connections.ts';
import { createDb, createPool } from '../db/index.ts';
import { createQueues } from '../queue/queues.ts';
import type { ProcessRuntime } from '../server.ts';
import { createReceiver } from './receiver.ts';
import { rejectionCounter } from './rejections.ts';
import { syncWebhooks } from './subscriptions.ts';
import { AnswerChecker, answerCheck } from '../openapi/check.ts';
import { openApiDocument } from '../openapi/document.ts';
import { webhookOperation } from '../openapi/webhook.ts';

export async function mount(rt: ProcessRuntime): Promise<void> {
  const { config, log } = rt;
  await createQueues(rt.boss);
  const pool = createPool(rt.database.url, config.WEBHOOK_COMMIT_CONCURRENCY + 1, log.child({ pool: 'receiver' }));
  const db = createDb(pool);
  // Refusals are counted on the shared pool: a flush never takes one of the commit slots above.
  const rejections = rejectionCounter(rt.database.db, log);
  const receiver = createReceiver({ pool, db, boss: rt.boss, config, log: log.child({ role: 'receiver' }), rejections });
  const route = '/webhooks/:connection';
  // With OPENAPI_CHECK_ANSWERS (every test), the endpoint's answers are held to the document as /api's are.
  const checked = config.OPENAPI_CHECK_ANSWERS
    ? [
        answerCheck(
          () => (checker ??= new AnswerChecker(openApiDocument([webhookOperation]))),
          () => route,
          log,
        ),
      ]
    : [];
  let checker: AnswerChecker | undefined;
  rt.router.post(route, ...checked, (ctx) => receiver.handle(ctx));
  rt.readiness.push(() => receiver.readiness());
  // The server has stopped accepting and finished its requests by the time this runs; close() commits
  // anything still waiting before the pool goes.
  const stopCounting = rejections.start();
  rt.onStop.push(async () => {
    await receiver.close();
    await stopCounting();
    await db.destroy();
  });
  // In the background: an unreachable service (retries, backoff) must not hold start up; deliveries are
  // accepted meanwhile. Shutdown gives it a moment to finish rather than cut it off mid-call.
  let syncing: Promise<void> = Promise.resolve();
  rt.afterListen.push(async () => {
    syncing = syncAllWebhooks(rt).catch((err) => log.warn({ err }, 'webhook subscription sync failed'));
  });
  rt.onStop.push(() => Promise.race([syncing, new Promise<void>((r) => setTimeout(r, 2000).unref())]));
  if (!config.COMMERCE_CLIENT_SECRET && !config.COMMERCE_CLIENT_SECRET_PREVIOUS) {
    log.warn('COMMERCE_CLIENT_SECRET is empty: every delivery will be refused with 401');
  }
}

/** Subscription sync for each active connection; a failure is logged, never fatal to start. */
export async function syncAllWebhooks(rt: Pick<ProcessRuntime, 'config' | 'log' | 'database' | 'publicUrl' | 'clients'>): Promise<void> {
  for (const connection of await listConnections(rt.database.db, 'active')) {
    try {
      await syncWebhooks({ db: rt.database.db, config: rt.config, log: rt.log, clients: rt.clients }, connection, rt.publicUrl);
    } catch (err) {
      rt.log.warn({ err, connection: connection.name }, 'webhook subscription sync failed; run `commerce-sync webhooks sync` later');
    }
  }
}
