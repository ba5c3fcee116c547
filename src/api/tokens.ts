// The access token of a connection. Privileged tokens are used as they are. OAuth tokens are refreshed ahead
// of expiry and after a 401, by one process at a time: the refresher holds the connection row's lock
// (SELECT ... FOR UPDATE) while it calls the token endpoint and stores the new pair in the same transaction,
// so the rotated refresh token is saved atomically; other processes block on the lock, then find the new
// token and reuse it instead of spending the (now rotated) refresh token again.
import type { Config } from '../config.ts';
import { getConnection, getConnectionForUpdate, setConnectionStatus, updateConnection } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import type { Connection } from '../db/schema.ts';
import type { Logger } from '../log.ts';
import { ApiError } from './errors.ts';
import { requestToken, type TokenResponse } from './oauth.ts';
import { decryptToken, encryptToken } from './secrets.ts';

export interface TokenDeps {
  db: Db;
  config: Config;
  log: Logger;
  key: Buffer;
}

/** Columns to store for a token response received at `now`. */
export function tokenColumns(key: Buffer, t: TokenResponse, now: Date, previousRefreshEnc: string | null = null) {
  return {
    access_token_enc: encryptToken(key, t.access_token),
    // A token response without a refresh token keeps the one we had.
    refresh_token_enc: t.refresh_token ? encryptToken(key, t.refresh_token) : previousRefreshEnc,
    token_expires_at: t.expires_in ? new Date(now.getTime() + t.expires_in * 1000) : null,
    token_refreshed_at: now,
  };
}

/** Refresh this far ahead of expiry: a quarter of the token's lifetime, at most 5 minutes. */
export function refreshMarginMs(c: Pick<Connection, 'token_expires_at' | 'token_refreshed_at'>): number {
  if (!c.token_expires_at) return 0;
  const lifetime = c.token_refreshed_at ? new Date(c.token_expires_at).getTime() - new Date(c.token_refreshed_at).getTime() : 7200_000;
  return Math.min(300_000, Math.max(0, lifetime / 4));
}

export function needsRefresh(c: Pick<Connection, 'auth_kind' | 'token_expires_at' | 'token_refreshed_at'>, now = Date.now()): boolean {
  if (c.auth_kind !== 'oauth' || !c.token_expires_at) return false;
  return new Date(c.token_expires_at).getTime() - refreshMarginMs(c) <= now;
}

/** Marks a connection as no longer usable (or usable again); the in-memory row follows. */
export async function setStatus(db: Db, connection: Connection, status: Connection['status'], reason: string | null): Promise<void> {
  await setConnectionStatus(db, connection.id, status, reason);
  connection.status = status;
  connection.status_reason = reason;
}

export class Tokens {
  #deps: TokenDeps;
  #conn: Connection;
  #plain: string | null = null;
  #plainOf: string | null = null;
  #refreshing: Promise<string> | null = null;

  constructor(deps: TokenDeps, connection: Connection) {
    this.#deps = deps;
    this.#conn = connection;
  }

  /** The encrypted form of the token current() returned last: identifies it across processes. */
  get currentEnc(): string | null {
    return this.#conn.access_token_enc;
  }

  async current(): Promise<{ token: string; enc: string }> {
    if (needsRefresh(this.#conn)) await this.refresh(this.#conn.access_token_enc);
    return { token: this.#decrypt(), enc: this.#conn.access_token_enc! };
  }

  #decrypt(): string {
    const enc = this.#conn.access_token_enc;
    if (!enc) throw new ApiError(`connection ${this.#conn.name} has no access token; run commerce-sync connect again`, { status: null });
    if (this.#plainOf !== enc) {
      this.#plain = decryptToken(this.#deps.key, enc);
      this.#plainOf = enc;
    }
    return this.#plain!;
  }

  /**
   * After a 401 on the token `staleEnc`: picks up a token stored since by another process (say a
   * `commerce-sync connect` that replaced a revoked token while this worker ran). True when there is one.
   */
  async reload(staleEnc: string | null): Promise<boolean> {
    const row = await getConnection(this.#deps.db, this.#conn.id);
    if (!row?.access_token_enc || row.access_token_enc === staleEnc) return false;
    Object.assign(this.#conn, row);
    return true;
  }

  /**
   * Replaces the token `staleEnc` (the one that expired or got a 401). Returns the new access token; when
   * another process already replaced it, that one. Throws ApiError (and marks the connection
   * `unauthorized`) when the service refuses the refresh token.
   */
  refresh(staleEnc: string | null): Promise<string> {
    this.#refreshing ??= this.#refresh(staleEnc).finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #refresh(staleEnc: string | null): Promise<string> {
    const { db, config, log, key } = this.#deps;
    const conn = this.#conn;
    if (conn.auth_kind !== 'oauth') {
      const reason = 'the service refused the privileged access token (401); add a new token with commerce-sync connect --token';
      await setStatus(db, conn, 'unauthorized', reason);
      throw new ApiError(reason, { status: 401 });
    }
    const outcome = await db.transaction().execute(async (trx) => {
      const row = await getConnectionForUpdate(trx, conn.id);
      if (row.access_token_enc && row.access_token_enc !== staleEnc && !needsRefresh(row)) {
        return { row, refreshed: false, error: null as ApiError | null };
      }
      if (!row.refresh_token_enc) {
        const reason = 'the access token expired and there is no refresh token; run commerce-sync connect --oauth again';
        const updated = (await setConnectionStatus(trx, conn.id, 'unauthorized', reason))!;
        return { row: updated, refreshed: false, error: new ApiError(reason, { status: 401 }) };
      }
      let t: TokenResponse;
      try {
        t = await requestToken(config, row.base_url, {
          grant_type: 'refresh_token',
          refresh_token: decryptToken(key, row.refresh_token_enc),
        });
      } catch (err) {
        if (err instanceof ApiError && err.retryable) throw err; // no answer or a server error: try again later
        const why = err instanceof ApiError ? `${err.status ?? ''} ${err.serviceMessage ?? err.message}`.trim() : (err as Error).message;
        const reason = `token refresh refused by the service (${why}); run commerce-sync connect --oauth again`;
        const updated = (await setConnectionStatus(trx, conn.id, 'unauthorized', reason))!;
        return {
          row: updated,
          refreshed: false,
          error: new ApiError(reason, { status: 401, requestId: err instanceof ApiError ? err.requestId : null }),
        };
      }
      const updated = (await updateConnection(trx, conn.id, tokenColumns(key, t, new Date(), row.refresh_token_enc)))!;
      return { row: updated, refreshed: true, error: null };
    });
    Object.assign(conn, outcome.row);
    if (outcome.error) {
      log.warn({ connection: conn.name, reason: conn.status_reason }, 'token refresh failed; connection marked unauthorized');
      throw outcome.error;
    }
    log.info(
      { connection: conn.name, refreshed: outcome.refreshed, expiresAt: conn.token_expires_at },
      outcome.refreshed ? 'access token refreshed' : 'access token refreshed by another process',
    );
    return this.#decrypt();
  }
}
