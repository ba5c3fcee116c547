#!/usr/bin/env bash
# podman (or podman-compose, as `scripts/podman.sh compose ...`) with scripts/containers.conf: the runtime and
# ulimits these machines need. Elsewhere plain `podman` / `docker` do the same work.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
if [ "${1:-}" = compose ]; then
  shift
  exec podman-compose "$@"
fi
exec podman "$@"
