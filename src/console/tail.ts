// The live tail: one dedicated PostgreSQL connection LISTENs on `sync_log` (logSync NOTIFYs the newest id
// of each batch), reads the new rows once and fans them out to every subscriber whose filter matches.
// Ids are handed out before commit, so a row can commit after a higher id was already read: the gap ids
// are remembered for a while and read again, so a late commit still reaches the tail. A slow poll backs
// up the notifications.
// The listening connection outlives database outages: when it is lost (an 'error' or an 'end' from pg) it is
// closed and opened again, with backoff from 1 s up to 15 s while the database stays away, and LISTENs again;
// a drain then reads whatever was written meanwhile. The poll meanwhile keeps failing quietly (one warning).
import pg from 'pg';
import { errorSummary, type Db } from '../db/index.ts';
import type { Logger } from '../log.ts';
import { latestSyncLogId, matchesFilter, syncLogAfter, type LogFilter, type LogRow } from './synclog.ts';

const GAP_KEEP_MS = 30_000;
const MAX_GAPS = 2000;
const BATCH = 1000;
const POLL_MS = 2000;
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 15_000;

interface Subscriber {
  filter: LogFilter;
  send: (row: LogRow) => void;
}

export class SyncLogTail {
  private readonly url: string;
  private readonly db: Db;
  private readonly log: Logger;
  private client: pg.Client | null = null;
  private readonly subscribers = new Set<Subscriber>();
  private lastId = 0;
  private readonly gaps = new Map<number, number>(); // id -> when first missed
  private draining: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;
  private poll: NodeJS.Timeout | null = null;
  /** Reconnect attempts since the connection was lost (0 while listening). */
  private attempts = 0;
  /** A read failed and was reported; the next failures stay quiet until one succeeds. */
  private readFailing = false;

  constructor(url: string, db: Db, log: Logger) {
    this.url = url;
    this.db = db;
    this.log = log;
  }

  /** Connects and starts listening; entries written from now on reach subscribers. */
  async start(): Promise<void> {
    this.lastId = await latestSyncLogId(this.db);
    await this.connect();
    // A writer that inserts without NOTIFY (or a notification lost with a connection) still shows up.
    this.poll = setInterval(() => {
      void this.drain();
    }, POLL_MS);
    this.poll.unref();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.url,
      application_name: 'commerce-sync tail',
      // A server that stops answering (rather than refusing) is noticed: the connect gives up, and an idle
      // LISTEN connection whose peer vanished is cut by TCP keepalive instead of waiting forever.
      connectionTimeoutMillis: 5000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    client.on('notification', () => {
      void this.drain();
    });
    // Listened to from the start: an 'error' with no listener would end the process. Before the client is
    // ours (connecting, LISTEN in flight) its failure rejects connect() below instead.
    client.on('error', (err) => {
      if (this.client === client) this.log.warn({ err: errorSummary(err) }, 'sync-log tail lost its connection; reconnecting');
      this.lost(client);
    });
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query('LISTEN sync_log');
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    if (this.attempts) this.log.info({ attempts: this.attempts }, 'sync-log tail listening again');
    this.attempts = 0;
    void this.drain(); // whatever was written while we were not listening
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    client.end().catch(() => {});
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retry) return;
    const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** Math.min(this.attempts, 4));
    this.attempts++;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.connect().catch((err) => {
        // The first failure says why; the database is usually just not back yet after that.
        if (this.attempts === 1) this.log.warn({ err: errorSummary(err) }, 'sync-log tail reconnect failed; retrying with backoff');
        else this.log.debug({ err: errorSummary(err), attempts: this.attempts }, 'sync-log tail reconnect failed');
        this.scheduleReconnect();
      });
    }, delay);
    this.retry.unref();
  }

  /** Reads new rows; concurrent calls coalesce into one more pass. */
  drain(): Promise<void> {
    if (this.draining) {
      this.again = true;
      return this.draining;
    }
    this.draining = (async () => {
      try {
        do {
          this.again = false;
          if (!this.subscribers.size) {
            // Nobody is watching: skip ahead instead of reading rows for no one.
            this.lastId = Math.max(this.lastId, await latestSyncLogId(this.db));
            this.gaps.clear();
            break;
          }
          const now = Date.now();
          for (const [id, since] of this.gaps) if (now - since > GAP_KEEP_MS) this.gaps.delete(id);
          const rows = await syncLogAfter(this.db, this.lastId, [...this.gaps.keys()], BATCH);
          for (const row of rows) {
            if (row.id > this.lastId) {
              for (let id = this.lastId + 1; id < row.id && this.gaps.size < MAX_GAPS; id++) this.gaps.set(id, now);
              this.lastId = row.id;
            } else {
              this.gaps.delete(row.id);
            }
            this.publish(row);
          }
          if (rows.length === BATCH) this.again = true;
        } while (this.again && !this.stopped);
        this.readFailing = false;
      } catch (err) {
        if (!this.stopped && !this.readFailing)
          this.log.warn({ err: errorSummary(err) }, 'sync-log tail read failed; the poll retries every 2 s');
        this.readFailing = true;
      } finally {
        this.draining = null;
      }
    })();
    return this.draining;
  }

  private publish(row: LogRow): void {
    for (const s of this.subscribers) {
      if (!matchesFilter(row, s.filter)) continue;
      try {
        s.send(row);
      } catch (err) {
        this.log.warn({ err }, 'tail subscriber failed');
      }
    }
  }

  /** Calls `send` for every new entry matching `filter`; returns the unsubscribe function. */
  subscribe(filter: LogFilter, send: (row: LogRow) => void): () => void {
    const s: Subscriber = { filter, send };
    this.subscribers.add(s);
    return () => {
      this.subscribers.delete(s);
    };
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    if (this.poll) clearInterval(this.poll);
    this.subscribers.clear();
    const client = this.client;
    this.client = null;
    await this.draining;
    await client?.end().catch(() => {});
  }
}
