// Tokens at rest: AES-256-GCM with a random 96-bit IV per value; stored as "v1:" + base64(iv | tag | data).
// The key is TOKEN_ENCRYPTION_KEY, or one generated once into DATA_DIR/secret.key (mode 600). Processes on
// several machines sharing one database must all be given the same TOKEN_ENCRYPTION_KEY.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';

const PREFIX = 'v1:';

export function keyFilePath(config: Pick<Config, 'DATA_DIR'>): string {
  return join(config.DATA_DIR, 'secret.key');
}

function parseKey(text: string, from: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== 32) throw new Error(`${from} does not hold a 32-byte base64 key`);
  return key;
}

/** The token key: configured, or read from (and on first use created in) DATA_DIR/secret.key. */
export function tokenKey(config: Pick<Config, 'TOKEN_ENCRYPTION_KEY' | 'DATA_DIR'>): Buffer {
  if (config.TOKEN_ENCRYPTION_KEY) return parseKey(config.TOKEN_ENCRYPTION_KEY, 'TOKEN_ENCRYPTION_KEY');
  const file = keyFilePath(config);
  try {
    return parseKey(readFileSync(file, 'utf8'), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(config.DATA_DIR, { recursive: true });
  try {
    // 'wx': two processes starting together must not each write a different key; the loser reads the winner's.
    writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return parseKey(readFileSync(file, 'utf8'), file);
}

export function encryptToken(key: Buffer, plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64');
}

export function decryptToken(key: Buffer, stored: string): string {
  if (!stored.startsWith(PREFIX)) throw new Error('stored token is not in the v1 encrypted format');
  const raw = Buffer.from(stored.slice(PREFIX.length), 'base64');
  if (raw.length < 28) throw new Error('stored token is truncated');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  try {
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    throw new Error(
      'stored token cannot be decrypted: TOKEN_ENCRYPTION_KEY (or DATA_DIR/secret.key) differs from the key it was stored with; reconnect or restore the key',
    );
  }
}
