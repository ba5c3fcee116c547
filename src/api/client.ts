// The client of one connection (the ApiClient contract): the transport (transport.ts: budget, token, retry
// loop), the reads (reads.ts: pagination, reads by ids) and the writes (writes.ts) put together.
import type { Connection } from '../db/schema.ts';
import { getByIds, pages } from './reads.ts';
import type { ConnectionTraits } from './types.ts';
import { type ClientDeps, type ClientOptions, Transport } from './transport.ts';
import type { ApiClient, ApiResponse, ByIds, Method, Page, RequestOptions } from './types.ts';
import { Writes } from './writes.ts';

export class Client extends Writes implements ApiClient {
  readonly connection: Connection;
  readonly traits: ConnectionTraits;
  #transport: Transport;

  constructor(deps: ClientDeps, connection: Connection, opts: ClientOptions = {}) {
    super();
    this.connection = connection;
    this.traits = deps.clients.traits(connection.id);
    this.#transport = new Transport(deps, connection, opts);
  }

  request<T = unknown>(method: Method, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    return this.#transport.request<T>(method, path, opts);
  }

  async get<T = unknown>(path: string, opts: RequestOptions = {}): Promise<T> {
    return (await this.request<T>('GET', path, opts)).body;
  }

  paginate<T = unknown>(path: string, opts: RequestOptions = {}): AsyncIterable<Page<T>> {
    return pages<T>(this.#transport, path, opts);
  }

  getByIds<T = unknown>(path: string, ids: number[], opts: RequestOptions = {}): Promise<ByIds<T>> {
    return getByIds<T>(this.#transport, path, ids, opts);
  }
}
