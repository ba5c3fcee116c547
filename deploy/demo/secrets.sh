#!/bin/sh
# The entrypoint of every service in compose.yaml, before its own (sh /demo/secrets.sh COMMAND...). deploy/.env
# ships no secret: each is `replace-me`. For the demo alone (no COMMERCE_BASE_URL, and COMMERCE_SERVICE_HOSTS
# names only *.localhost hosts: the sandbox), the placeholders get secrets of the demo's own, made on its first
# start into the data volume ($dir) by the first service to start and read by the others. Pointed at any other
# service they stay as they are, and commerce-sync (and PostgreSQL's first start) refuse to start on them.
set -euf
dir=/data/demo-secrets

demo() {
  [ -z "${COMMERCE_BASE_URL:-}" ] || return 1
  for host in $(printf '%s' "${COMMERCE_SERVICE_HOSTS:-}" | tr ',' ' '); do
    case "${host%:*}" in *.localhost) ;; *) return 1 ;; esac
  done
}

hex() { od -An -vtx1 -N"$1" /dev/urandom | tr -d ' \n'; }

# Written whole into a folder of its own, then renamed into place: of services starting together, one's rename
# wins and the others drop theirs. PostgreSQL (another user, the volume read-only) reads its password alone.
make_secrets() {
  tmp=$(mktemp -d /data/.demo-secrets.XXXXXX)
  hex 24 >"$tmp/postgres-password"
  cat >"$tmp/env" <<EOF
OPERATOR_TOKEN=$(hex 24)
TOKEN_ENCRYPTION_KEY=$(head -c 32 /dev/urandom | base64 -w0)
COMMERCE_CLIENT_SECRET=$(hex 24)
CHANNEL_WEBHOOK_SECRET=whsec_$(head -c 32 /dev/urandom | base64 -w0)
SANDBOX_TOKEN=$(hex 24)
SANDBOX_ADMIN_TOKEN=$(hex 24)
EOF
  chmod 600 "$tmp/env"
  chmod 644 "$tmp/postgres-password"
  chmod 755 "$tmp"
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
}

if demo; then
  [ -d "$dir" ] || [ ! -w /data ] || make_secrets
  # PostgreSQL cannot make them: it waits for a commerce-sync service to.
  for _ in $(seq 60); do [ -f "$dir/postgres-password" ] && break; sleep 1; done
  pw=$(cat "$dir/postgres-password") || { echo "secrets.sh: no demo secrets in $dir after 60 s" >&2; exit 1; }
  case "${POSTGRES_PASSWORD:-}" in *replace-me*) export POSTGRES_PASSWORD="$pw" ;; esac
  case "${DATABASE_URL:-}" in *replace-me*) export DATABASE_URL="$(printf '%s' "$DATABASE_URL" | sed "s/replace-me/$pw/")" ;; esac
  if [ -r "$dir/env" ]; then
    while IFS='=' read -r name value; do
      eval "now=\${$name:-replace-me}"
      case "$now" in *replace-me*) export "$name=$value" ;; esac
    done <"$dir/env"
    # The sandbox signs its deliveries with the secret the receivers check them with.
    export SANDBOX_CLIENT_SECRET="$COMMERCE_CLIENT_SECRET"
  fi
fi
exec "$@"
