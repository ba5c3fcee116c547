#!/usr/bin/env bash
# Cuts release X.Y.Z (docs/upgrades.md): `npm run release -- X.Y.Z` or scripts/release.sh X.Y.Z
#
# 1. The release commit: CHANGELOG.md's "## Unreleased" section becomes "## X.Y.Z (date)"; package.json (and the
#    lock file's copy), the Kubernetes base's image tag, deploy/.env's and compose.yaml's image, and
#    lint/migrations.json (the release's last migration) say X.Y.Z. Only those files are committed. Skipped when HEAD
#    is that commit already (a second run after a failed check was fixed forward).
# 2. The checks, on an export of that commit (never the working tree: other work may be in it): typecheck, lint,
#    npm test, and npm run test:deploy (the image built and run, compose, the upgrade from the previous release).
# 3. The tag: vX.Y.Z, annotated, its message the release's CHANGELOG section. When no release was tagged before,
#    the commit before the release commit is tagged v<the version it carried> first: the upgrade test starts there.
# Nothing is pushed: `git push origin vX.Y.Z` (and the image: podman push localhost/commerce-sync:X.Y.Z <registry>).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
version=${1:-}
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: scripts/release.sh X.Y.Z (a semantic version)" >&2
  exit 2
fi
tag=v$version
if git rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
  echo "release: $tag exists already" >&2
  exit 1
fi
node=node_modules/.bin/node
[ -x "$node" ] || { echo "release: run npm ci first" >&2; exit 1; }
files=(CHANGELOG.md package.json package-lock.json lint/migrations.json deploy/kubernetes/kustomization.yaml deploy/.env deploy/compose.yaml)
current=$("$node" -p 'require("./package.json").version')
newest=$(git tag --list 'v*' --sort=-v:refname | head -1)
if [ -n "$newest" ] && [ "$(printf '%s\n%s\n' "${newest#v}" "$version" | sort -V | tail -1)" != "$version" ]; then
  echo "release: $version is not after the newest release $newest" >&2
  exit 1
fi

# 1. The release commit.
if [ "$current" = "$version" ] && grep -q "^## $version " CHANGELOG.md && git diff --quiet HEAD -- "${files[@]}"; then
  echo "release: HEAD carries $version already; checking it"
  previous_version=$(git show HEAD~1:package.json | "$node" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).version))')
else
  if ! git diff --quiet HEAD -- "${files[@]}"; then
    echo "release: commit or drop the changes to ${files[*]} first" >&2
    exit 1
  fi
  if ! grep -q '^## Unreleased' CHANGELOG.md; then
    echo 'release: CHANGELOG.md has no "## Unreleased" section: write what changed for someone upgrading there first' >&2
    exit 1
  fi
  previous_version=$current
  sed -i "0,/^## Unreleased.*/s//## $version ($(date -u +%Y-%m-%d))/" CHANGELOG.md
  npm version --no-git-tag-version --allow-same-version "$version" >/dev/null
  sed -i "s/^\(    newTag: \).*/\1$version/" deploy/kubernetes/kustomization.yaml
  sed -i "s|^COMMERCE_SYNC_IMAGE=.*|COMMERCE_SYNC_IMAGE=localhost/commerce-sync:$version|" deploy/.env
  sed -i "s|localhost/commerce-sync:[0-9][^}]*}|localhost/commerce-sync:$version}|" deploy/compose.yaml
  # The first release also records what the version before it (tagged below) shipped.
  [ -n "$newest" ] || "$node" lint/migrations.ts --record "$current"
  "$node" lint/migrations.ts --record "$version"
  git add -- "${files[@]}"
  git commit -q -m "Release $version" -- "${files[@]}"
  echo "release: committed $(git rev-parse --short HEAD) Release $version"
fi
release_commit=$(git rev-parse HEAD)

# The release this one upgrades from: the newest tag, or (first release) the commit before, tagged now.
if [ -z "$newest" ]; then
  git tag -a "v$previous_version" -m "$previous_version: the version before releases were cut (tagged by the first release, $version)" HEAD~1
  newest=v$previous_version
  echo "release: tagged $(git rev-parse --short HEAD~1) as $newest, the version the upgrade test starts from"
fi

# 2. The checks, on an export of the release commit.
work=.build/release/$version
rm -rf "$work"
mkdir -p "$work"
git archive "$release_commit" | tar -x -C "$work"
ln -s "$repo/node_modules" "$work/node_modules"
# Tests read the shared spec and fixtures beside the checkout (../shared): the export gets the same neighbour.
[ -d "$repo/../shared" ] && ln -sfn "$(cd "$repo/.." && pwd)/shared" "$(dirname "$work")/shared"
log=$repo/.build/release/$version.log
echo "release: checking $version in $work (log: $log)"
started=$(date +%s)
(
  cd "$work"
  export UPGRADE_REPO=$repo UPGRADE_FROM=$newest
  set -x
  npm run typecheck
  npm run lint
  npm run lint:migrations
  npm test
  npm run test:deploy
) >"$log" 2>&1 || {
  echo "release: a check failed (the last lines of $log below); fix forward, then run scripts/release.sh $version again" >&2
  tail -40 "$log" >&2
  exit 1
}
echo "release: checks passed in $(($(date +%s) - started)) s: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tr '\n' ' ')"

# 3. The tag, its message the CHANGELOG section.
notes=$(git show "$release_commit:CHANGELOG.md" | awk -v v="$version" '$0 ~ "^## "v" " {on=1; next} on && /^## / {exit} on')
printf 'commerce-sync %s\n\n%s\n' "$version" "$notes" | git tag -a --cleanup=verbatim "$tag" -F - "$release_commit"
echo "release: tagged $tag ($(git rev-parse --short "$release_commit")); image localhost/commerce-sync:$version"
echo "release: publish with git push origin $newest $tag"
