// The OpenAPI document (GET /api/openapi.json): a valid OpenAPI 3.1 document by a real validator, naming every
// /api route the running console has mounted (read from its routers, not a list); and the answer check that every
// test runs with (OPENAPI_CHECK_ANSWERS, src/openapi/check.ts) refuses an answer the document does not allow.
import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import Router from '@koa/router';
import Koa from 'koa';
import { z } from 'zod';
import { AnswerChecker, answerCheck } from '../../src/openapi/check.ts';
import { openApiDocument } from '../../src/openapi/document.ts';
import { documented, operationsOf } from '../../src/openapi/registry.ts';
import { listen } from '../../src/server.ts';
import { captureLogger } from '../support/log.ts';
import { routesOf } from '../support/routes.ts';
import { addConnection, consoleServer, sendDelivery } from './harness.ts';

const TOKEN = 'op-secret-token-for-the-openapi-tests';
const auth = { authorization: `Bearer ${TOKEN}` };

t.test('the document is valid OpenAPI 3.1 and names every /api route', async (t) => {
  const { base, rt, db } = await consoleServer(t, { token: TOKEN, receiver: true });
  const res = await fetch(`${base}/api/openapi.json`, { headers: auth });
  t.equal(res.status, 200);
  const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, unknown>>; components: Record<string, any> };
  const result = await new Validator().validate(doc as Parameters<Validator['validate']>[0]);
  t.same(result.errors ?? [], [], 'no validation errors');
  t.ok(result.valid, 'a valid OpenAPI document');
  t.equal(doc.openapi, '3.1.0');
  t.same(Object.keys(doc.components.securitySchemes).sort(), ['bearer', 'session', 'signature']);

  const inDoc = new Set(
    Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    ),
  );
  // Less the routes declared undocumented (each says why: a fallback beside paths listed one by one).
  const undocumented = (r: { method: string; path: string; router: Router }) =>
    operationsOf(r.router).some((o) => o.undocumented && o.method.toUpperCase() === r.method && o.path === r.path);
  const mounted = routesOf(rt.app)
    .filter((r) => (r.path.startsWith('/api/') || r.path.startsWith('/webhooks/')) && r.method !== 'HEAD' && !undocumented(r))
    .map((r) => `${r.method} ${r.path}`);
  t.ok(mounted.length > 40, `${mounted.length} routes under /api and /webhooks`);
  t.same(
    mounted.filter((r) => !inDoc.has(r)),
    [],
    'every mounted /api route (and the webhook endpoint) is in the document',
  );
  t.same(
    [...inDoc].filter((r) => !mounted.includes(r)),
    [],
    'and the document names no route that is not mounted',
  );

  // Each operation kind is a path of its own (no {kind} beside {id}); a word that is no kind meets a route the
  // document leaves out, whose answer is checked as described all the same (not the answer check's 500).
  t.ok(doc.paths['/api/operations/void']?.post && !doc.paths['/api/operations/{kind}'], 'POST /api/operations/void, no {kind}');
  const post = (path: string) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' });
  const unknown = await post('/api/operations/teleport');
  t.equal(unknown.status, 404, 'an unknown operation kind: 404');
  t.match(await unknown.json(), {
    error: 'unknown operation "teleport": one of import-order, ship, invoice, pay, void, return, receive-purchase-order, stock-count',
  });
  const refused = await post('/api/operations/void');
  t.equal(refused.status, 400, 'a known kind with bad input: 400');
  t.match(await refused.json(), { error: 'invalid void input' });

  // The webhook endpoint's answers match its description too (the receiver answers outside the console's router).
  await addConnection(db, 'shop');
  const checker = new AnswerChecker(doc);
  const answers = [
    await sendDelivery(base, 'shop', { event: 'variants/update', object_id: 1 }, 'openapi-1'),
    await sendDelivery(base, 'shop', { event: 'variants/update', object_id: 1 }, 'openapi-1'),
    await sendDelivery(base, 'nobody', { event: 'variants/update', object_id: 1 }, 'openapi-2'),
    await fetch(`${base}/webhooks/shop`, { method: 'POST', body: '{}', headers: { 'x-service-signature': 'wrong' } }),
  ];
  t.same(
    answers.map((a) => a.status),
    [200, 200, 404, 401],
  );
  for (const a of answers)
    t.equal(checker.mismatch('POST', '/webhooks/:connection', a.status, await a.json()), null, `${a.status} as described`);
});

t.test('the answer check refuses an answer the document does not allow', async (t) => {
  const { base } = await consoleServer(t, { token: TOKEN });
  const res = await fetch(`${base}/api/openapi.json`, { headers: auth });
  const checker = new AnswerChecker((await res.json()) as Record<string, unknown>);
  t.equal(checker.mismatch('POST', '/webhooks/:connection', 200, { ok: true }), null, 'a right answer passes');
  t.match(
    checker.mismatch('POST', '/webhooks/:connection', 200, { ok: true, extra: 1 }),
    /additionalProperty: "extra"/,
    'an extra field is caught',
  );
  t.match(checker.mismatch('POST', '/webhooks/:connection', 200, { ok: 'yes' }), /\/ok/, 'a wrong type is caught, with its path');
  t.match(checker.mismatch('POST', '/webhooks/:connection', 418, { error: 'teapot' }), /does not list/, 'so is a status not listed');
  t.match(checker.mismatch('GET', '/api/nowhere', 200, {}), /not in the OpenAPI document/, 'and a route not described');

  // Live: a route whose answer drifts is answered 500, naming the route, the status and the mismatch, and logged.
  const router = new Router();
  documented(router).get('/api/drift', { role: 'viewer', summary: 'drifts', answers: { 200: z.object({ n: z.number() }) } }, (ctx) => {
    // @ts-expect-error: the compiler refuses it too (the answer's type is its schema's); the check holds what gets past
    ctx.body = { n: 'one' };
  });
  const { log, lines } = captureLogger('error');
  const app = new Koa();
  app.use(
    answerCheck(
      () => new AnswerChecker(openApiDocument(operationsOf(router))),
      () => '/api/drift',
      log,
    ),
  );
  app.use(router.routes());
  const server = await listen(app, 0, '127.0.0.1');
  t.teardown(() => server.close(0));
  const drifted = await fetch(`http://127.0.0.1:${server.port}/api/drift`);
  t.equal(drifted.status, 500, 'a drifted answer is not sent');
  t.match(await drifted.json(), { error: /GET \/api\/drift answered 200 .*\/n must be number/ });
  t.match(lines(), [{ msg: /does not match the OpenAPI document/, route: '/api/drift', status: 200 }], 'and logged');
});
