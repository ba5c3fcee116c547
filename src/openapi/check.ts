// Holds the code to the OpenAPI document: with OPENAPI_CHECK_ANSWERS on (every test), each JSON answer of an /api
// route is validated (status and body) against the document before it is sent, and one that does not match is
// replaced by a 500 naming the route, the status and where it differs, and logged. So an answer that drifts from
// its schema fails whichever test receives it. Event streams and other non-JSON answers are not checked.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Context, Next } from 'koa';
import type { Logger } from '../log.ts';
import { problem } from '../server.ts';
import { type Json, openApiPath, undocumentedPaths } from './document.ts';

/** Validates answers against one document; the validators are compiled on first use. */
export class AnswerChecker {
  readonly #ajv: Ajv2020;
  readonly #doc: Json;
  readonly #validators = new Map<string, ValidateFunction | null>();

  constructor(doc: Json) {
    // The routes the document leaves out are held to their descriptions too (built beside it, never sent).
    const paths = { ...(doc.paths as Record<string, Json>) };
    for (const [path, item] of Object.entries(undocumentedPaths(doc))) paths[path] = { ...paths[path], ...item };
    this.#doc = { ...doc, paths };
    // Formats (date-time) are documentation; zod's patterns carry the checks that matter. OpenAPI's own keywords
    // beside the schemas (paths, responses) are not JSON Schema: not strict.
    this.#ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true, validateSchema: false });
    this.#ajv.addSchema(this.#doc, 'openapi.json');
  }

  /** Why `body` is not what the document says `method route` answers with `status`; null when it is. */
  mismatch(method: string, route: string, status: number, body: unknown): string | null {
    const path = openApiPath(route);
    const m = method.toLowerCase();
    const operation = (this.#doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>)[path]?.[m];
    if (!operation) return `${method} ${route} is not in the OpenAPI document`;
    if (!operation.responses[status]) return `${method} ${route} answered ${status}, a status the OpenAPI document does not list for it`;
    const key = `${path} ${m} ${status}`;
    let validate = this.#validators.get(key);
    if (validate === undefined) {
      const pointer = ['paths', path, m, 'responses', String(status), 'content', 'application/json', 'schema']
        .map((p) => encodeURIComponent(p.replaceAll('~', '~0').replaceAll('/', '~1')))
        .join('/');
      const content = (operation.responses[status] as { content?: Record<string, unknown> }).content ?? {};
      validate = 'application/json' in content ? this.#ajv.compile({ $ref: `openapi.json#/${pointer}` }) : null;
      this.#validators.set(key, validate);
    }
    if (!validate) return `${method} ${route} answered ${status} with JSON, which the OpenAPI document does not say it answers`;
    if (validate(body)) return null;
    const errors = (validate.errors ?? []).map((e) => `${e.instancePath || '(the answer)'} ${e.message}${describeParams(e.params)}`);
    return `${method} ${route} answered ${status} with a body the OpenAPI document does not allow: ${errors.slice(0, 5).join('; ')}`;
  }
}

const describeParams = (params: Record<string, unknown>) => {
  const shown = Object.entries(params).filter(([k]) => ['additionalProperty', 'missingProperty', 'allowedValue', 'type'].includes(k));
  return shown.length ? ` (${shown.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ')})` : '';
};

/**
 * Middleware checking every JSON answer under /api (and the webhook endpoint's, src/receiver/role.ts). `routeOf` names the route a request matched (as the role
 * table does); `checker` is asked for lazily, once every route has been mounted.
 */
export function answerCheck(checker: () => AnswerChecker, routeOf: (ctx: Context) => string, log: Logger) {
  return async (ctx: Context, next: Next) => {
    await next();
    if (!/^\/(api|webhooks)\//.test(ctx.path) || ctx.method === 'HEAD' || ctx.respond === false) return;
    const body: unknown = ctx.body;
    if (body === null || typeof body !== 'object' || Buffer.isBuffer(body) || typeof (body as { pipe?: unknown }).pipe === 'function')
      return;
    if (!ctx.response.is('json')) return;
    const route = routeOf(ctx);
    // As it goes on the wire (Dates as ISO text, undefined fields left out).
    const wrong = checker().mismatch(ctx.method, route, ctx.status, JSON.parse(JSON.stringify(body)));
    if (!wrong) return;
    log.error({ route, status: ctx.status, mismatch: wrong }, 'answer does not match the OpenAPI document (OPENAPI_CHECK_ANSWERS)');
    problem(ctx, 500, `answer check (OPENAPI_CHECK_ANSWERS): ${wrong}`);
  };
}
