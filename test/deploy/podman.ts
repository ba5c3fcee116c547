// podman for the deploy checks (npm run test:deploy): scripts/podman.sh, which adds the runtime and ulimits these
// machines need (scripts/containers.conf), run without blocking the event loop (the sandboxes live in this process).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('../../', import.meta.url).pathname;
export const version = (JSON.parse(spawnSync('cat', ['package.json'], { cwd: root, encoding: 'utf8' }).stdout) as { version: string })
  .version;
/** The image `npm run test:deploy` builds and runs. */
export const IMAGE = process.env.COMMERCE_SYNC_IMAGE ?? `localhost/commerce-sync:${version}`;
/** The Containerfile's base: the public node:24 where it can be pulled (IMAGE_BASE), else one made by scripts/base-images.sh. */
export const BASE = process.env.IMAGE_BASE ?? 'localhost/commerce-sync-node:24';
export const POSTGRES_IMAGE = process.env.POSTGRES_IMAGE ?? 'localhost/commerce-sync-postgres:15';

export interface Run {
  code: number;
  out: string;
}

/** `scripts/podman.sh <args>` (`compose ...` for podman-compose); its output, stdout and stderr as they came. */
export function podman(
  args: string[],
  opts: { cwd?: string; onOut?: (chunk: string) => void; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(`${root}scripts/podman.sh`, args, { cwd: opts.cwd ?? root, env: opts.env ?? process.env });
    let out = '';
    const on = (d: Buffer) => {
      out += d;
      opts.onOut?.(d.toString());
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
    child.on('close', (code) => resolve({ code: code ?? 1, out }));
  });
}

export function hasPodman(): boolean {
  return spawnSync('sh', ['-c', 'command -v podman && command -v podman-compose'], { encoding: 'utf8' }).status === 0;
}

const extraCaDir = '/usr/local/share/ca-certificates';
/** This machine's own extra CA certificates (PEM), such as a proxy's that intercepts its traffic. */
export const extraCas = (): string[] =>
  existsSync(extraCaDir)
    ? readdirSync(extraCaDir)
        .filter((f) => f.endsWith('.crt'))
        .map((f) => readFileSync(join(extraCaDir, f), 'utf8'))
    : [];

/** `podman build` arguments giving npm ci in the build this machine's extra CAs, as a build secret the image does not keep. */
function extraCaSecret(): string[] {
  const cas = extraCas();
  if (!cas.length) return [];
  const file = join(root, '.build/extra-ca.crt');
  mkdirSync(join(root, '.build'), { recursive: true });
  writeFileSync(file, cas.join('\n'));
  return ['--secret', `id=extra-ca,src=${file}`];
}

/** The base images (scripts/base-images.sh: skips those it made as it would now) and the image of this tree; the image's size in bytes. */
export async function buildImage(log: (line: string) => void): Promise<number> {
  const want = [
    BASE === 'localhost/commerce-sync-node:24' ? 'node' : '',
    POSTGRES_IMAGE === 'localhost/commerce-sync-postgres:15' ? 'postgres' : '',
  ].filter(Boolean);
  if (want.length) {
    const base = await new Promise<Run>((resolve) => {
      const child = spawn(`${root}scripts/base-images.sh`, want, { cwd: root });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      child.on('close', (code) => resolve({ code: code ?? 1, out }));
    });
    if (base.code !== 0) throw new Error(`scripts/base-images.sh failed:\n${base.out.slice(-4000)}`);
    log(
      base.out
        .split('\n')
        .filter((l) => /exists|MB|GB|kB/.test(l))
        .join('; '),
    );
  }
  const started = Date.now();
  const build = await podman(['build', '--build-arg', `BASE=${BASE}`, ...extraCaSecret(), '-t', IMAGE, '-f', 'Containerfile', '.']);
  if (build.code !== 0) throw new Error(`podman build failed:\n${build.out.slice(-4000)}`);
  const size = Number((await podman(['image', 'inspect', '--format', '{{.Size}}', IMAGE])).out.trim());
  log(`built ${IMAGE} from ${BASE} in ${((Date.now() - started) / 1000).toFixed(0)} s: ${(size / 1e6).toFixed(0)} MB`);
  return size;
}
