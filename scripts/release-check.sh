#!/usr/bin/env bash
# Validates the release configuration and builds a snapshot of this machine's platform with
# it, publishing nothing (the tag-time build is `goreleaser release`). goreleaser is pinned and
# built from the Go module proxy into ./bin once.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v2.15.1
if ! bin/goreleaser --version 2>/dev/null | grep -q "${version#v}"; then
  echo "release-check: installing goreleaser $version into ./bin (a few minutes, once)"
  GOBIN="$PWD/bin" go install "github.com/goreleaser/goreleaser/v2@$version"
fi
bin/goreleaser check
# A snapshot build of this machine's platform with the config's build settings (flags,
# ldflags, binary names); `make cross` builds every release platform, and the tag-time
# `goreleaser release` adds the archives, checksums, signature and registry manifest.
bin/goreleaser build --snapshot --clean --single-target --parallelism 2 >/dev/null 2>dist.log || { cat dist.log >&2; rm -f dist.log; exit 1; }
rm -f dist.log
find dist -type f -perm -u+x -name 'terraform-provider-redlock_v*' | grep -q . || { echo "release-check: no provider binary built" >&2; exit 1; }
find dist -type f -perm -u+x -name lockagent | grep -q . || { echo "release-check: no lockagent binary built" >&2; exit 1; }
echo "release-check: configuration valid; snapshot built: $(find dist -type f -perm -u+x | sed 's|^dist/||' | tr '\n' ' ')"
rm -rf dist
