// Every /api route is declared through `documented(router)`: the one act that mounts a route also describes it
// (summary, path and query parameters, body, answers by status) for the OpenAPI document (./document.ts), so a
// route cannot exist undocumented. Schemas are zod's: request bodies reuse the schemas that validate them, answers
// are described next to the code that builds them, and the answer check (./check.ts) holds the code to them.
import type Router from '@koa/router';
import type { RouterMiddleware } from '@koa/router';
import { z } from 'zod';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** An answer that is not JSON (an event stream, a page): its media type and what it carries. */
export interface OtherAnswer {
  media: string;
  description: string;
}

export interface Operation {
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
  answers: Record<number, z.ZodType | OtherAnswer>;
  /** Statuses answered with a problem (`{error}`); the guard's 401, 403 and 429 are added to every /api route. */
  problems?: number[];
}

export interface DescribedOperation extends Operation {
  method: Method;
  /** The route as the router knows it: /api/channels/:name. */
  path: string;
}

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

const described = new WeakMap<Router, DescribedOperation[]>();

/** The operations declared on a router, in the order they were mounted. */
export const operationsOf = (router: Router): readonly DescribedOperation[] => described.get(router) ?? [];

type Declare = (path: string, op: Operation, ...handlers: RouterMiddleware[]) => void;

/** Mounts routes on `router` and records their description: `api.get(path, {summary, answers}, handler)`. */
export function documented(router: Router): Record<Method, Declare> {
  let list = described.get(router);
  if (!list) described.set(router, (list = []));
  const declare =
    (method: Method): Declare =>
    (path, op, ...handlers) => {
      list.push({ ...op, method, path });
      router[method](path, ...handlers);
    };
  return { get: declare('get'), post: declare('post'), put: declare('put'), patch: declare('patch'), delete: declare('delete') };
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
