#!/usr/bin/env bash
# Makes the two base images the Containerfile and deploy/compose.yaml start from, out of Debian's packages,
# for machines that reach Debian's archive and the npm registry but no image registry:
#
#   localhost/commerce-sync-node:24      stands for the public node:24 image: Debian 12 (minbase, ca-certificates),
#                                        Node 24 at /usr/local/bin/node (the binary the project's `node`
#                                        package brings), npm, a user `node` (1000:1000), CMD node; and the
#                                        machine's own extra CA certificates (/usr/local/share/ca-certificates),
#                                        trusted by Node too, as a company's base image would carry its proxy's
#   localhost/commerce-sync-postgres:15  Debian's postgresql package, run as the public postgres image runs
#                                        (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB; deploy/postgres/entrypoint.sh)
#
# Where the public images can be pulled, none of this is needed: `podman build .` uses node:24 by default.
# Needs root, mmdebstrap and podman (apt-get install mmdebstrap podman). Skips an image that exists unless
# --force. The root file systems are written under .build/ (git-ignored).
# Usage: scripts/base-images.sh [--force] [node|postgres]...
set -euo pipefail
cd "$(dirname "$0")/.."
force=0
wanted=()
for a in "$@"; do
  case "$a" in
    --force) force=1 ;;
    node | postgres) wanted+=("$a") ;;
    *) echo "usage: $0 [--force] [node|postgres]..." >&2; exit 2 ;;
  esac
done
[ ${#wanted[@]} -gt 0 ] || wanted=(node postgres)
podman() { scripts/podman.sh "$@"; }
out=.build/base
mkdir -p "$out"
# The machine's own apt sources (deb822 or one-line), so the images come from the archive the machine uses.
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list
trim=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright')
# apt's lists and caches are not kept in an image.
clean='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb "$1"/var/log/*.log'

have() { [ "$force" = 0 ] && podman image exists "$1"; }

for image in "${wanted[@]}"; do
  case "$image" in
    node)
      tag=localhost/commerce-sync-node:24
      if have "$tag"; then echo "$tag exists"; continue; fi
      node=node_modules/node/bin/node
      [ -x "$node" ] || { echo "no $node: run npm ci first" >&2; exit 1; }
      npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
      [ -f "$npm_dir/package.json" ] || { echo "cannot find npm's folder (from $(command -v npm))" >&2; exit 1; }
      export NODE_BIN="$PWD/$node" NPM_DIR="$npm_dir"
      mmdebstrap --variant=minbase --include=ca-certificates "${trim[@]}" \
        --customize-hook='install -m 755 "$NODE_BIN" "$1/usr/local/bin/node"' \
        --customize-hook='mkdir -p "$1/usr/local/lib/node_modules" && cp -a "$NPM_DIR" "$1/usr/local/lib/node_modules/npm"' \
        --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm" && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
        --customize-hook='if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/" && chroot "$1" update-ca-certificates >/dev/null; fi' \
        --customize-hook='chroot "$1" groupadd --gid 1000 node && chroot "$1" useradd --uid 1000 --gid node --create-home --shell /bin/bash node' \
        --customize-hook="$clean" \
        bookworm "$out/node.tar" "$sources"
      podman import --change 'CMD ["node"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
        --message "Debian 12 with Node $("$node" --version) (scripts/base-images.sh)" "$out/node.tar" "$tag"
      ;;
    postgres)
      tag=localhost/commerce-sync-postgres:15
      if have "$tag"; then echo "$tag exists"; continue; fi
      export ENTRYPOINT="$PWD/deploy/postgres/entrypoint.sh"
      mmdebstrap --variant=minbase --include=postgresql "${trim[@]}" \
        --customize-hook='rm -rf "$1"/var/lib/postgresql/*/main "$1"/etc/postgresql/*/main' \
        --customize-hook='install -m 755 "$ENTRYPOINT" "$1/usr/local/bin/postgres-entrypoint"' \
        --customize-hook='mkdir -p "$1/var/lib/postgresql/data" && chroot "$1" chown postgres:postgres /var/lib/postgresql/data && chmod 700 "$1/var/lib/postgresql/data"' \
        --customize-hook="$clean" \
        bookworm "$out/postgres.tar" "$sources"
      podman import --change 'USER postgres' --change 'ENV PGDATA=/var/lib/postgresql/data' \
        --change 'ENTRYPOINT ["/usr/local/bin/postgres-entrypoint"]' --change 'EXPOSE 5432' \
        --change 'VOLUME /var/lib/postgresql/data' --change 'STOPSIGNAL SIGINT' \
        --message "Debian 12 with its postgresql package (scripts/base-images.sh)" "$out/postgres.tar" "$tag"
      ;;
  esac
  rm -f "$out/$image.tar"
  podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' "$tag"
done
