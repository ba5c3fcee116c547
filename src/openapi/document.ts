// The OpenAPI 3.1 document of the /api routes (as declared through ./registry.ts) and the webhook endpoint, built
// from their zod schemas with zod's own JSON Schema output (draft 2020-12, OpenAPI 3.1's dialect). Schemas named
// with `.meta({ id })` become components.schemas, shared by every operation that uses them.
import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { type DescribedOperation, type OtherAnswer, problemSchema } from './registry.ts';
import { webhookOperation } from './webhook.ts';

/** The console session's cookie: part of the API's contract (its `session` scheme), set by src/console/auth.ts. */
export const SESSION_COOKIE = 'cs_operator';

export type Json = Record<string, unknown>;

/** The package's version and licence (an SPDX identifier) are the document's. */
const { version, license } = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as {
  version: string;
  license: string;
};

/** Answered by the operator guard on every /api route (src/console/routes.ts, auth.ts). */
const GUARD_PROBLEMS = [401, 403, 429];
/** Answered by the input boundary on every route (src/server.ts): a control character, a field given twice. */
const INPUT_PROBLEMS = [400];

/** /api/channels/:name -> /api/channels/{name} */
export const openApiPath = (route: string) => route.replace(/:(\w+)/g, '{$1}');
const paramsOf = (route: string) => [...route.matchAll(/:(\w+)/g)].map((m) => m[1]!);

/** getChannelsByName for GET /api/channels/:name: stable names for generated clients. */
function operationId(op: DescribedOperation): string {
  const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
  const words = op.path
    .split('/')
    .filter((s) => s && s !== 'api')
    .map((s) =>
      s.startsWith(':')
        ? `By${cap(s.slice(1))}`
        : s
            .split(/[^A-Za-z0-9]+/)
            .map(cap)
            .join(''),
    );
  return op.method + words.join('');
}

/** Converts zod schemas, moving the named ones into `components` (an id names one schema only). */
function converter(components: Json) {
  const relink = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(relink)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v).map(([k, x]) => [
              k,
              k === '$ref' && typeof x === 'string' ? x.replace('#/$defs/', '#/components/schemas/') : relink(x),
            ]),
          )
        : v;
  return (schema: z.ZodType, io: 'input' | 'output'): Json => {
    const { $schema: _, $defs, ...root } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
    for (const [id, def] of Object.entries(($defs ?? {}) as Json)) {
      const moved = relink(def);
      if (id in components && JSON.stringify(components[id]) !== JSON.stringify(moved))
        throw new Error(`two different schemas are called ${id} in the OpenAPI document`);
      components[id] = moved;
    }
    // A named schema (the root too) is a $ref to its component.
    return relink(root) as Json;
  };
}

/** The document as GET /api/openapi.json answers it (its parts are OpenAPI 3.1's own objects). */
const objects = z.record(z.string(), z.unknown());
export const openApiAnswer = z
  .object({
    openapi: z.literal('3.1.0'),
    info: z.object({
      title: z.string(),
      version: z.string(),
      description: z.string(),
      license: z.object({ name: z.string(), identifier: z.string() }),
    }),
    jsonSchemaDialect: z.string(),
    servers: z.array(z.object({ url: z.string() })),
    tags: z.array(z.object({ name: z.string(), description: z.string() })),
    security: z.array(z.record(z.string(), z.array(z.string()))),
    paths: z.record(z.string(), objects).describe('Path items (OpenAPI 3.1).'),
    components: z.object({ schemas: objects, securitySchemes: objects }),
  })
  .describe('An OpenAPI 3.1 document.');
export type OpenApiDocument = z.output<typeof openApiAnswer>;

const isOther = (a: z.ZodType | OtherAnswer): a is OtherAnswer => !(a instanceof z.ZodType);

/** Each document's undocumented routes, described as its paths are (for the answer check, ./check.ts): never sent. */
const undocumented = new WeakMap<OpenApiDocument, Record<string, Json>>();
/** The path items of the routes a document leaves out (`undocumented` in ./registry.ts), as its own would be. */
export const undocumentedPaths = (doc: object): Record<string, Json> => undocumented.get(doc as OpenApiDocument) ?? {};

/** The document for these operations (the /api routes mounted on the console's router) and the webhook endpoint. */
export function openApiDocument(operations: readonly DescribedOperation[]): OpenApiDocument {
  const schemas: Json = {};
  const convert = converter(schemas);
  const problem = convert(problemSchema, 'output');
  const paths: Record<string, Json> = {};
  const hidden: Record<string, Json> = {};
  for (const op of [...operations, webhookOperation]) {
    const guarded = op !== webhookOperation;
    const parameters: Json[] = paramsOf(op.path).map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
      ...(op.params?.[name] ? { description: op.params[name] } : {}),
    }));
    if (op.query) {
      const q = convert(op.query, 'input') as { properties?: Record<string, Json>; required?: string[] };
      for (const [name, s] of Object.entries(q.properties ?? {})) {
        const { description, ...schema } = s;
        parameters.push({
          name,
          in: 'query',
          required: q.required?.includes(name) ?? false,
          schema,
          ...(description ? { description } : {}),
        });
      }
    }
    for (const h of op.headers ?? []) parameters.push({ ...h, in: 'header', schema: { type: 'string' } });
    const responses: Json = {};
    for (const [status, answer] of Object.entries(op.answers)) {
      const description = isOther(answer) ? answer.description : (answer.description ?? STATUS_CODES[Number(status)] ?? status);
      const content = isOther(answer)
        ? { [answer.media]: { schema: { type: 'string' } } }
        : { 'application/json': { schema: convert(answer, 'output') } };
      responses[status] = { description, content };
    }
    for (const status of [...(op.problems ?? []), ...INPUT_PROBLEMS, ...(guarded ? GUARD_PROBLEMS : [])].sort((a, b) => a - b))
      responses[status] ??= { description: STATUS_CODES[status] ?? String(status), content: { 'application/json': { schema: problem } } };
    const path = openApiPath(op.path);
    const items = op.undocumented ? hidden : paths;
    items[path] ??= {};
    items[path][op.method] = {
      operationId: operationId(op),
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: [guarded ? 'api' : 'webhooks'],
      ...(parameters.length ? { parameters } : {}),
      ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: convert(op.body, 'input') } } } } : {}),
      responses,
      ...(guarded ? {} : { security: [{ signature: [] }] }),
    };
  }
  const doc: OpenApiDocument = {
    openapi: '3.1.0',
    info: {
      title: 'commerce-sync',
      version,
      license: { name: license, identifier: license },
      description:
        'The JSON API of the commerce-sync console, and the webhook endpoint the service delivers to. Every /api ' +
        'route takes a Bearer token (OPERATOR_TOKEN, or a personal token) or the console session cookie; each needs ' +
        'a role (viewer, operator, admin), and errors answer problem JSON.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: '/' }],
    tags: [
      { name: 'api', description: 'The console JSON API (operator auth).' },
      { name: 'webhooks', description: 'Deliveries from the service (signature auth).' },
    ],
    security: [{ bearer: [] }, { session: [] }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'OPERATOR_TOKEN (the break-glass administrator) or a personal token (cst_..., POST /api/tokens or ' +
            '`commerce-sync tokens create`). Also accepted as the password of Basic auth.',
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: SESSION_COOKIE,
          description: 'The session a console sign-in opened (the login form, or OpenID Connect).',
        },
        signature: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Service-Signature',
          description: 'Webhook deliveries only: the Base64 HMAC-SHA256 of the raw body under the client secret.',
        },
      },
    },
  };
  undocumented.set(doc, hidden);
  return doc;
}
