#!/usr/bin/env bash
# Makes the two base images the Containerfile and deploy/compose.yaml start from, out of Debian's packages,
# for machines that reach Debian's archive and the npm registry but no image registry:
#
#   localhost/commerce-sync-node:24      stands for the public node:24 image: Debian 12 (minbase, ca-certificates),
#                                        Node 24 at /usr/local/bin/node (the binary the project's `node`
#                                        package brings), npm, a user `node` (1000:1000), CMD node
#   localhost/commerce-sync-postgres:15  Debian's postgresql package, run as the public postgres image runs
#                                        (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB; deploy/postgres/entrypoint.sh)
# Neither keeps a setuid or setgid program. With --extra-ca the node image also trusts, Node included, this
# machine's own extra CA certificates (/usr/local/share/ca-certificates), as a company's base image may carry its
# proxy's; without it (the default) it trusts Debian's alone, so an image released from it does not trust whatever
# intercepts this machine's traffic. (The image's own build needs no such base: the Containerfile takes a CA for
# npm ci as a build secret.)
#
# Where the public images can be pulled, none of this is needed: `podman build .` uses node:24 by default.
# Needs root, mmdebstrap and podman (apt-get install mmdebstrap podman). Skips an image that exists, made by this
# script as it is with the same options, unless --force. The root file systems are written under .build/ (git-ignored).
# Usage: scripts/base-images.sh [--force] [--extra-ca] [node|postgres]...
set -euo pipefail
cd "$(dirname "$0")/.."
force=0
extra_ca=0
wanted=()
for a in "$@"; do
  case "$a" in
    --force) force=1 ;;
    --extra-ca) extra_ca=1 ;;
    node | postgres) wanted+=("$a") ;;
    *) echo "usage: $0 [--force] [--extra-ca] [node|postgres]..." >&2; exit 2 ;;
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
# apt's lists and caches are not kept in an image, nor a setuid or setgid bit (su, mount, passwd...).
clean='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb "$1"/var/log/*.log
  find "$1" -xdev -type f -perm /6000 -exec chmod ug-s {} +'

# What an image was made from (this script, its files, its options) is its label: one made otherwise is made again.
made_from() { cat scripts/base-images.sh "$@" | sha256sum | cut -c1-16; }
have() {
  [ "$force" = 0 ] && [ "$(podman image inspect --format '{{index .Labels "commerce-sync.made-from"}}' "$1" 2>/dev/null)" = "$2" ]
}

for image in "${wanted[@]}"; do
  case "$image" in
    node)
      tag=localhost/commerce-sync-node:24
      from="$(made_from) extra-ca=$extra_ca"
      if have "$tag" "$from"; then echo "$tag exists"; continue; fi
      node=node_modules/node/bin/node
      [ -x "$node" ] || { echo "no $node: run npm ci first" >&2; exit 1; }
      npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
      [ -f "$npm_dir/package.json" ] || { echo "cannot find npm's folder (from $(command -v npm))" >&2; exit 1; }
      export NODE_BIN="$PWD/$node" NPM_DIR="$npm_dir"
      extra_ca_hook=() extra_ca_env=()
      if [ "$extra_ca" = 1 ]; then
        extra_ca_hook=(--customize-hook='if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then mkdir -p "$1/usr/local/share/ca-certificates" && cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/" && chroot "$1" update-ca-certificates >/dev/null; fi')
        extra_ca_env=(--change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt')
      fi
      mmdebstrap --variant=minbase --include=ca-certificates "${trim[@]}" \
        --customize-hook='install -m 755 "$NODE_BIN" "$1/usr/local/bin/node"' \
        --customize-hook='mkdir -p "$1/usr/local/lib/node_modules" && cp -a "$NPM_DIR" "$1/usr/local/lib/node_modules/npm"' \
        --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm" && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
        "${extra_ca_hook[@]}" \
        --customize-hook='chroot "$1" groupadd --gid 1000 node && chroot "$1" useradd --uid 1000 --gid node --create-home --shell /bin/bash node' \
        --customize-hook="$clean" \
        bookworm "$out/node.tar" "$sources"
      podman import --change 'CMD ["node"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        "${extra_ca_env[@]}" --change "LABEL commerce-sync.made-from=\"$from\"" \
        --message "Debian 12 with Node $("$node" --version) (scripts/base-images.sh)" "$out/node.tar" "$tag"
      ;;
    postgres)
      tag=localhost/commerce-sync-postgres:15
      from=$(made_from deploy/postgres/entrypoint.sh)
      if have "$tag" "$from"; then echo "$tag exists"; continue; fi
      export ENTRYPOINT="$PWD/deploy/postgres/entrypoint.sh"
      mmdebstrap --variant=minbase --include=postgresql "${trim[@]}" \
        --customize-hook='rm -rf "$1"/var/lib/postgresql/*/main "$1"/etc/postgresql/*/main' \
        --customize-hook='install -m 755 "$ENTRYPOINT" "$1/usr/local/bin/postgres-entrypoint"' \
        --customize-hook='mkdir -p "$1/var/lib/postgresql/data" && chroot "$1" chown postgres:postgres /var/lib/postgresql/data && chmod 700 "$1/var/lib/postgresql/data"' \
        --customize-hook="$clean" \
        bookworm "$out/postgres.tar" "$sources"
      podman import --change 'USER postgres' --change 'ENV PGDATA=/var/lib/postgresql/data' \
        --change 'ENTRYPOINT ["/usr/local/bin/postgres-entrypoint"]' --change 'EXPOSE 5432' \
        --change 'VOLUME /var/lib/postgresql/data' --change 'STOPSIGNAL SIGINT' --change "LABEL commerce-sync.made-from=\"$from\"" \
        --message "Debian 12 with its postgresql package (scripts/base-images.sh)" "$out/postgres.tar" "$tag"
      ;;
  esac
  rm -f "$out/$image.tar"
  podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' "$tag"
done
