#!/usr/bin/env bash
# Release checks (RELEASING.md). Publishes nothing.
#   scripts/release-check.sh config   cheap, every CI run: the version sources agree (VERSION,
#                                     CHANGELOG headings, our module requirements) and
#                                     .goreleaser.yml names what the registry expects
#                                     (internal/releaseconfig), no goreleaser needed
#   scripts/release-check.sh full     make release-check: config, then the consumer check
#                                     (internal/libdeps: our modules from a file GOPROXY at
#                                     VERSION, three users, no replace), goreleaser check and
#                                     a snapshot build (goreleaser pinned, built into ./bin
#                                     once), every release platform (make cross), and the
#                                     released lockagent links no testing package
#   scripts/release-check.sh tag vX.Y.Z   goreleaser's before hook at a tag: the tag is
#                                     v<VERSION> and CHANGELOG.md has "## X.Y.Z — YYYY-MM-DD"
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(tr -d ' \n' <VERSION)

check_tag() {
  local tag=$1
  if [ "$tag" != "v$version" ]; then
    echo "release-check: tag $tag is not v$version (VERSION): tag v$version, or change VERSION first (RELEASING.md)" >&2
    exit 1
  fi
  if ! grep -Eq "^## ${version//./\\.} — [0-9]{4}-[0-9]{2}-[0-9]{2}\$" CHANGELOG.md; then
    echo "release-check: CHANGELOG.md has no heading \"## $version — YYYY-MM-DD\": rename Unreleased to it before tagging" >&2
    exit 1
  fi
  echo "release-check: tag $tag = VERSION, CHANGELOG has its dated heading"
}

config() {
  go test -count=1 ./internal/releaseconfig/
  # At a tagged commit, the tag must be this version.
  local tag
  if tag=$(git describe --exact-match --tags --match 'v[0-9]*' HEAD 2>/dev/null); then
    check_tag "$tag"
  fi
}

# lockagent as goreleaser builds it (CGO_ENABLED=0), but with symbols, links no testing
# package. The negative control: a test binary (internal/overlap's, a small one), which does,
# is found out by the same check.
no_testing_in_lockagent() {
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  CGO_ENABLED=0 go build -ldflags "-X main.version=$version" -o "$tmp/lockagent" ./lockagent/cmd/lockagent
  CGO_ENABLED=0 go test -c -o "$tmp/control.test" ./internal/overlap
  links_testing() { go tool nm "$1" | grep -Eq ' [TtDdBbRr] testing\.'; }
  if links_testing "$tmp/lockagent"; then
    echo "release-check: the lockagent binary links the testing package:" >&2
    go tool nm "$tmp/lockagent" | grep ' testing\.' | head -5 >&2
    echo "  find the import with: go list -deps ./lockagent/cmd/lockagent, and move it to non-test code" >&2
    exit 1
  fi
  if ! links_testing "$tmp/control.test"; then
    echo "release-check: the testing-package check found nothing in a test binary: the check is broken" >&2
    exit 1
  fi
  "$tmp/lockagent" version | grep "^lockagent $version " >/dev/null || {
    echo "release-check: lockagent version says \"$("$tmp/lockagent" version)\", not $version (VERSION)" >&2
    exit 1
  }
  echo "release-check: lockagent $version links no testing package (go tool nm; a test binary does, the control)"
}

goreleaser_snapshot() {
  local gr_version=v2.15.1
  if ! bin/goreleaser --version 2>/dev/null | grep "${gr_version#v}" >/dev/null; then
    echo "release-check: installing goreleaser $gr_version into ./bin (a few minutes, once)"
    GOBIN="$PWD/bin" go install "github.com/goreleaser/goreleaser/v2@$gr_version"
  fi
  bin/goreleaser check
  # A snapshot build of this machine's platform with the config's build settings (flags,
  # ldflags, binary names); `make cross` builds every release platform, and the tag-time
  # `goreleaser release` adds the archives, checksums, signature and registry manifest.
  # The release's own tag (vX.Y.Z): the modules' tags on the same commit (provider/vX.Y.Z,
  # test/vX.Y.Z) would otherwise name the snapshot's version (git describe takes any of
  # them), and the provider's binary name with it.
  local tag
  tag=$(git describe --tags --abbrev=0 --match 'v[0-9]*' 2>/dev/null || true)
  GORELEASER_CURRENT_TAG=$tag bin/goreleaser build --snapshot --clean --single-target --parallelism 2 >/dev/null 2>dist.log || { cat dist.log >&2; rm -f dist.log; exit 1; }
  rm -f dist.log
  find dist -type f -perm -u+x -name 'terraform-provider-redlock_v*' | grep . >/dev/null || { echo "release-check: no provider binary built" >&2; exit 1; }
  find dist -type f -perm -u+x -name lockagent | grep . >/dev/null || { echo "release-check: no lockagent binary built" >&2; exit 1; }
  echo "release-check: goreleaser configuration valid; snapshot built: $(find dist -type f -perm -u+x | sed 's|^dist/||' | tr '\n' ' ')"
  rm -rf dist
}

case "${1:-full}" in
  config) config ;;
  tag) check_tag "${2:?usage: scripts/release-check.sh tag vX.Y.Z}" ;;
  full)
    config
    scripts/modules.sh check
    # The consumer check prints each user's go.mod and the library user's go list -m all.
    # make test's hang guard (-timeout 40m): on a busy machine the three consumers' builds
    # outlasted go test's default 10 minutes.
    go test -count=1 -timeout 40m -v -run 'TestConsumer|TestProxy' ./internal/libdeps/
    make --no-print-directory cross
    no_testing_in_lockagent
    goreleaser_snapshot
    ;;
  *) echo "usage: scripts/release-check.sh config|full|tag vX.Y.Z" >&2; exit 2 ;;
esac
