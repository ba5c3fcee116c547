// Every guarded route is mounted through `documented(router)`: the one act that mounts a route also gives the least
// role it needs (src/console/roles.ts reads it: the role table is what was mounted) and, for an /api route,
// describes it (summary, path and query parameters, body, answers by status) for the OpenAPI document
// (./document.ts): no route without a role, no /api route undocumented. Console pages and forms, and
// /metrics, are mounted with `.page`: a role, no description, left out of the document. Schemas are zod's:
// request bodies reuse the schemas that validate them, answers are described next to the code that builds them;
// the compiler holds a handler's `ctx.body` to its answers' types (z.output), and the answer check (./check.ts)
// holds what is sent to the document.
import type Router from '@koa/router';
import type { RouterMiddleware } from '@koa/router';
import type { DefaultContext, DefaultState } from 'koa';
import { z } from 'zod';
import type { Role } from '../config.ts';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** An answer that is not JSON (an event stream, a page): its media type and what it carries. */
export interface OtherAnswer {
  media: string;
  description: string;
}

/** A route's answers by status: a JSON answer's schema, or a non-JSON answer. */
export type Answers = Record<number, z.ZodType | OtherAnswer>;

/** A route as the API document describes it. */
export interface Operation<A extends Answers = Answers> {
  summary: string;
  description?: string;
  /** Path parameters' meanings (each `:name` of the path is a string parameter). */
  params?: Record<string, string>;
  /** The query parameters the route reads, as an object of optional strings (with `.describe()`). */
  query?: z.ZodObject;
  /** Request headers the route reads (beyond authentication). */
  headers?: { name: string; required: boolean; description: string }[];
  /** The JSON body, with the schema that validates it. */
  body?: z.ZodType;
  /** JSON answers by status (or a non-JSON answer); problems are listed in `problems`. */
  answers: A;
  /** Statuses answered with a problem (`{error}`); the guard's 401, 403 and 429 are added to every /api route. */
  problems?: number[];
  /**
   * Why the route is left out of the document: it answers, its answers are checked as described here, but a client
   * is not told of it (a fallback beside paths the document lists one by one, a path kept a release after it moved).
   */
  undocumented?: string;
}

export interface DescribedOperation extends Operation {
  method: Method;
  /** The route as the router knows it: /api/channels/:name. */
  path: string;
}

/** What mounts an /api route: the least role it needs (no route is mounted without deciding who may use it), and its description. */
export interface ApiRoute<A extends Answers = Answers> extends Operation<A> {
  role: Role;
}

/** What mounts a console page or form (or /metrics): the least role it needs; it is not in the API document. */
export interface PageRoute {
  role: Role;
}

/**
 * What JSON.stringify turns into T: T itself, with a Date wherever T has a plain string (a Date goes out as its ISO
 * text, which is what `timestamp` describes).
 */
export type Sent<T> = T extends string
  ? string extends T
    ? T | Date
    : T
  : T extends readonly (infer E)[]
    ? readonly Sent<E>[]
    : T extends object
      ? { [K in keyof T]: Sent<T[K]> }
      : T;

/** What a handler may set as `ctx.body` to answer with schema `S`. */
export type Answer<S extends z.ZodType> = Sent<z.output<S>>;

/** What a route's handlers may set as `ctx.body`: one of its JSON answers as sent (or text, bytes or a stream). */
export type AnswerBody<A extends Answers> = {
  [S in keyof A]: A[S] extends z.ZodType ? Answer<A[S]> : string | Buffer | NodeJS.ReadableStream;
}[keyof A];

/** A handler of a route answering `A`: its context's `body` is typed by the answers' schemas. */
export type Handler<A extends Answers = Answers> = RouterMiddleware<DefaultState, DefaultContext, AnswerBody<A>>;

/**
 * Errors answer problem JSON (`problem` in src/server.ts): the error, and for some the details named here
 * (field problems; the role a route needs; a feed cursor's limits).
 */
export const problemSchema = z
  .object({
    error: z.string().describe('What went wrong, in a sentence.'),
    problems: z.array(z.string()).optional().describe('Each invalid field, as `path: message`.'),
    role: z.string().optional().describe('The role the caller has (403 of the role table).'),
    needs: z.string().optional().describe('The least role the route needs (403 of the role table).'),
    since: z.number().int().optional().describe('The cursor asked after (410 of a feed).'),
    kept_after: z.number().int().optional().describe('The oldest cursor still answered (410 of a feed).'),
  })
  .meta({ id: 'Problem' });

/** What was mounted on one router through the registry. */
interface Mounted {
  operations: DescribedOperation[];
  /** Each route's least role, by `METHOD /path` (GET /api/channels/:name). */
  roles: Map<string, Role>;
}

const mounted = new WeakMap<Router, Mounted>();
const mountedOn = (router: Router): Mounted => {
  let m = mounted.get(router);
  if (!m) mounted.set(router, (m = { operations: [], roles: new Map() }));
  return m;
};

/** The operations declared on a router (the undocumented ones too), in the order they were mounted. */
export const operationsOf = (router: Router): readonly DescribedOperation[] => mounted.get(router)?.operations ?? [];

/** The least role of each route mounted on a router through the registry, by `METHOD /path`: the role table. */
export const rolesOf = (router: Router): ReadonlyMap<string, Role> => mounted.get(router)?.roles ?? new Map();

type Declare = <A extends Answers>(path: string, route: ApiRoute<A>, ...handlers: Handler<A>[]) => void;
type DeclarePage = (path: string, page: PageRoute, ...handlers: RouterMiddleware[]) => void;

/**
 * Mounts routes on `router`, recording each one's role and (for /api) its description:
 * `api.get(path, {role, summary, answers}, handler)`; a page: `api.page.get(path, {role}, handler)`.
 */
export function documented(router: Router): Record<Method, Declare> & { page: Record<'get' | 'post', DeclarePage> } {
  const m = mountedOn(router);
  /** Records the route's role (none when a caller without types left it out: the guard refuses such a route to everyone). */
  const record = (method: Method, path: string, role: Role | undefined) => {
    const key = `${method.toUpperCase()} ${path}`;
    if (m.roles.has(key)) throw new Error(`${key} is mounted twice`);
    if (role) m.roles.set(key, role);
  };
  const declare =
    (method: Method): Declare =>
    (path, { role, ...op }, ...handlers) => {
      record(method, path, role);
      m.operations.push({ ...op, method, path });
      router[method](path, ...(handlers as RouterMiddleware[]));
    };
  const page =
    (method: 'get' | 'post'): DeclarePage =>
    (path, { role }, ...handlers) => {
      record(method, path, role);
      router[method](path, ...handlers);
    };
  return {
    get: declare('get'),
    post: declare('post'),
    put: declare('put'),
    patch: declare('patch'),
    delete: declare('delete'),
    page: { get: page('get'), post: page('post') },
  };
}

// Pieces answers share. Times are sent as ISO 8601 (a Date's JSON, or PostgreSQL's with an offset).
export const timestamp = z.iso.datetime({ offset: true });
/** Quantities and prices are exact decimal strings (PostgreSQL numeric), never floats. */
export const decimal = z
  .string()
  .regex(/^-?\d+(\.\d+)?$/)
  .describe('An exact decimal, as a string.');
/** A record as the service sent it (`raw`), or a job's data: JSON of the service's or pg-boss's making. */
export const blob = z.unknown().describe('JSON as the service (or the queue) has it: not described here.');
