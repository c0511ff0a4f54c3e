#!/usr/bin/env bash
# scripts/build-terraform.sh VERSION OUT
# Builds terraform VERSION (e.g. v1.11.4) from HashiCorp's released source into OUT, for a
# machine that has no terraform on PATH and cannot download HashiCorp's binary (scripts/deps.sh
# and scripts/test-deps.sh call it only then: a terraform you installed yourself is always
# the one used).
#
# What is built, and why: terraform's own module at VERSION, fetched through the Go module
# proxy (go mod download), compiled with two changes, both to leave out cloud SDKs that are
# most of terraform's compile and download and that nothing in the kit uses:
#   - the remote-state backends that bring an SDK of their own (azurerm, consul, cos, gcs,
#     kubernetes, oss, pg, s3) are left out of the backend table in
#     internal/backend/init/init.go. The kit's demo, tests and examples keep state in local
#     files (the "local" backend, which stays, with remote, cloud, http and inmem). Such a
#     terraform refuses a configuration with, say, `backend "s3"` ("Unsupported backend type").
#   - the module installer's S3 and GCS getters are left out: go-getter (terraform's module
#     downloader) is built from a copy of the version terraform requires with get_s3.go and
#     get_gcs.go removed (a replace directive to that copy), and terraform's getter table
#     (internal/getmodules/getter.go) loses its "s3" and "gcs" entries. This drops the AWS SDK
#     v1, Google's storage and API clients and their OAuth/OpenCensus dependencies from the
#     build. Such a terraform refuses an "s3::" or "gcs::" module source (and the
#     *.s3.amazonaws.com / www.googleapis.com/storage shorthands); git, http(s), file, the
#     registry and local paths stay.
# For either, use your own terraform. The edits are made by this script in a throwaway copy;
# no terraform source is kept in this repository. The binary prints its real version
# (`terraform version`: "Terraform v1.11.4"), built as a release build (version.dev=no), no
# symbol table or DWARF. Every module terraform requires stays at the version its go.mod pins.
#
# Build flags: the go command's defaults (no -trimpath, cgo as the go command decides), the
# same the provider, lockagent (scripts/build-binaries.sh) and `go test` use, so the standard
# library compiled for one serves the others from GOCACHE. (Without -trimpath the throwaway
# copy's path is part of terraform's own packages' cache keys: a rebuild recompiles them. A
# checkout builds terraform once; -trimpath for all three would cost `go test` its sharing
# with the provider build instead.) The binary keeps no DWARF (-s -w), so the compiler writes
# none for terraform and its modules either (-dwarf=false; the standard library keeps the
# defaults, to stay shared): no effect on the binary, less compile work.
#
# BUILD_TERRAFORM_AFTER=FILE (make demo sets it): fetch and prepare everything (the source,
# the edits, every module the build needs), then wait until FILE exists before compiling.
# make demo compiles the provider and lockagent first and then creates FILE: compiles that run
# side by side share nothing in flight, so the standard library would compile twice.
set -euo pipefail
version=${1:?usage: scripts/build-terraform.sh VERSION OUT (e.g. v1.11.4 bin/terraform-1.11.4)}
out=${2:?usage: scripts/build-terraform.sh VERSION OUT}
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
module=github.com/hashicorp/terraform
# The backends left out: import path suffix under internal/backend/remote-state/.
dropped="azure consul cos gcs kubernetes oss pg s3"

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
# Terraform's own go.mod decides every version: no workspace, no -mod=vendor from outside.
export GOWORK=off GOFLAGS=-mod=readonly
cd "$work"

echo "build-terraform: $module@$version (go mod download, through the Go module proxy)"
src=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] && [ -f "$src/go.mod" ] || { echo "build-terraform: go mod download $module@$version gave no source directory" >&2; exit 1; }
cp -r "$src" "$work/terraform"
chmod -R u+w "$work/terraform"
cd "$work/terraform"

# The backend table: drop each dropped backend's import line and every line that uses its
# import name (its entry in the map).
init=internal/backend/init/init.go
[ -f "$init" ] || { echo "build-terraform: $module@$version has no $init: this script knows the backend table of terraform v1.x" >&2; exit 1; }
for b in $dropped; do
  alias=$(sed -n "s|^[[:space:]]*\([A-Za-z0-9_]*\) \"$module/internal/backend/remote-state/$b\"\$|\1|p" "$init")
  [ -n "$alias" ] || { echo "build-terraform: $init at $version has no import of remote-state/$b: this script does not know this version's backend table" >&2; exit 1; }
  sed -i -e "\|\"$module/internal/backend/remote-state/$b\"|d" -e "/\\b$alias\\./d" "$init"
done
if grep -q 'internal/backend/remote-state/\(azure\|consul\|cos\|gcs\|kubernetes\|oss\|pg\|s3\)"' "$init"; then
  echo "build-terraform: $init still imports a dropped backend after the edit" >&2
  exit 1
fi
# Since v1.6 those backends (and internal/legacy, which only they use) are Go modules of their
# own inside terraform's repository, which the module zip leaves out; terraform's go.mod
# requires them through replace directives to those missing directories. Nothing imports them
# now: drop the requirements and the replaces.
for m in $(sed -n "s|^replace \($module/internal/[^ ]*\) => \./.*|\1|p" go.mod); do
  go mod edit -droprequire="$m" -dropreplace="$m"
done

# A godebug setting this Go no longer knows (v1.11's tlskyber=0, for a key exchange newer Go
# releases dropped) stops every go command in this module: drop those, one at a time.
for _ in 1 2 3 4 5; do
  err=$(go list -m 2>&1 >/dev/null) || true
  case "$err" in *'unknown godebug "'*) ;; *) break ;; esac
  key=${err#*unknown godebug \"}
  key=${key%%\"*}
  echo "build-terraform: dropping godebug $key from go.mod (this Go, $(go env GOVERSION), does not know it)"
  go mod edit -dropgodebug="$key"
done

# The module installer without the S3 and GCS getters: terraform's getter table first ...
getters=internal/getmodules/getter.go
[ -f "$getters" ] && grep -q '"s3": *new(getter.S3Getter)' "$getters" && grep -q '"gcs": *new(getter.GCSGetter)' "$getters" ||
  { echo "build-terraform: $getters at $version has no \"s3\"/\"gcs\" getter entries: this script does not know this version's getter table" >&2; exit 1; }
sed -i -e '/"s3": *new(getter.S3Getter)/d' -e '/"gcs": *new(getter.GCSGetter)/d' "$getters"
# ... then go-getter itself, at the version terraform requires, from a copy without them.
getter_module=github.com/hashicorp/go-getter
getter_version=$(go list -m -f '{{.Version}}' "$getter_module")
getter_src=$(go mod download -json "$getter_module@$getter_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$getter_src" ] && [ -f "$getter_src/get_s3.go" ] && [ -f "$getter_src/get_gcs.go" ] ||
  { echo "build-terraform: $getter_module@$getter_version has no get_s3.go/get_gcs.go: this script does not know this go-getter" >&2; exit 1; }
cp -r "$getter_src" "$work/go-getter"
chmod -R u+w "$work/go-getter"
rm -f "$work"/go-getter/get_s3*.go "$work"/go-getter/get_gcs*.go
sed -i -e '/"s3": *new(S3Getter)/d' -e '/"gcs": *new(GCSGetter)/d' "$work/go-getter/get.go"
# (a test file or a type left behind would fail the build; these are the table entries)
if grep -q 'new(\(getter\.\)\?\(S3\|GCS\)Getter)' "$work"/go-getter/*.go "$getters"; then
  echo "build-terraform: an S3/GCS getter is still in a getter table after the edit" >&2
  exit 1
fi
go mod edit -replace="$getter_module=$work/go-getter"

if [ -n "${BUILD_TERRAFORM_AFTER:-}" ]; then
  # Every module the build needs, now (go list loads the packages without compiling them).
  go list -deps . >/dev/null
  echo "build-terraform: sources and modules ready; compiling once $BUILD_TERRAFORM_AFTER exists"
  while [ ! -e "$BUILD_TERRAFORM_AFTER" ]; do sleep 0.2; done
fi
echo "build-terraform: go build (only the local-state backends: $dropped left out; no S3/GCS module getters)"
# -dwarf=false for all but the standard library (std=: the defaults): see the header.
go build -gcflags=all=-dwarf=false -gcflags=std= -ldflags "-s -w -X $module/version.dev=no" -o "$work/terraform-bin" .
got=$(CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=/dev/null "$work/terraform-bin" version 2>/dev/null | sed -n 1p)
[ "$got" = "Terraform $version" ] || { echo "build-terraform: the built terraform says \"$got\", not Terraform $version" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
mv "$work/terraform-bin" "$out"
echo "build-terraform: $out ($got, local-state backends only, no S3/GCS module getters)"
