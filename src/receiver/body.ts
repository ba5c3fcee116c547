// Reads a request body as raw bytes, refusing (early) anything over the limit. The signature covers the
// exact bytes received, so the body is never decoded or re-serialised before verification.
import type { IncomingMessage } from 'node:http';

export class BodyTooLarge extends Error {
  constructor(limit: number) {
    super(`body larger than ${limit} bytes`);
  }
}

export function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(new BodyTooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err: Error | null) => {
      req.off('data', onData).off('end', onEnd).off('error', done).off('aborted', onAborted);
      if (err) reject(err);
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        done(new BodyTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => done(null);
    const onAborted = () => done(new Error('request aborted'));
    req.on('data', onData).on('end', onEnd).on('error', done).on('aborted', onAborted);
  });
}
