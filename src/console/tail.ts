// The live tail: one dedicated PostgreSQL connection LISTENs on `sync_log` (logSync NOTIFYs the newest id
// of each batch), reads the new rows once and fans them out to every subscriber whose filter matches.
// Ids are handed out before commit, so a row can commit after a higher id was already read: the gap ids
// are remembered for a while and read again, so a late commit still reaches the tail. A slow poll backs
// up the notifications.
import pg from 'pg';
import type { Db } from '../db/index.ts';
import type { Logger } from '../log.ts';
import { latestSyncLogId, matchesFilter, syncLogAfter, type LogFilter, type LogRow } from './synclog.ts';

const GAP_KEEP_MS = 30_000;
const MAX_GAPS = 2000;
const BATCH = 1000;
const POLL_MS = 2000;

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
    const client = new pg.Client({ connectionString: this.url, application_name: 'commerce-sync tail' });
    client.on('notification', () => {
      void this.drain();
    });
    client.on('error', (err) => {
      if (this.client === client) this.log.warn({ err }, 'sync-log tail lost its connection; reconnecting');
      this.lost(client);
    });
    client.on('end', () => this.lost(client));
    await client.connect();
    await client.query('LISTEN sync_log');
    if (this.stopped) {
      await client.end();
      return;
    }
    this.client = client;
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
    this.retry = setTimeout(() => {
      this.retry = null;
      this.connect().catch((err) => {
        this.log.warn({ err }, 'sync-log tail reconnect failed');
        this.scheduleReconnect();
      });
    }, 1000);
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
      } catch (err) {
        if (!this.stopped) this.log.warn({ err }, 'sync-log tail read failed');
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
