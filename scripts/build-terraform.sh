#!/usr/bin/env bash
# scripts/build-terraform.sh VERSION OUT
# Builds terraform VERSION (e.g. v1.11.4) from HashiCorp's released source into OUT, for a
# machine that has no terraform on PATH and cannot download HashiCorp's binary (scripts/deps.sh
# and scripts/test-deps.sh call it only then: a terraform you installed yourself is always
# the one used).
#
# What is built, and why: terraform's own module at VERSION, fetched through the Go module
# proxy (go mod download), compiled with one change: the remote-state backends that bring an
# SDK of their own (azurerm, consul, cos, gcs, kubernetes, oss, pg, s3) are left out of the backend
# table in internal/backend/init/init.go. Their SDKs are most of terraform's compile and
# download; the kit's demo, tests and examples keep state in local files (the "local" backend,
# which stays, with remote, cloud, http and inmem). Such a terraform refuses a configuration
# with, say, `backend "s3"` ("Unsupported backend type"); use your own terraform for that.
# The edit is made by this script in a throwaway copy; no terraform source is kept in this
# repository. The binary prints its real version (`terraform version`: "Terraform v1.11.4"),
# built as a release build (version.dev=no), -trimpath, no symbol table or DWARF.
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

echo "build-terraform: go build (only the local-state backends: $dropped left out)"
go build -trimpath -ldflags "-s -w -X $module/version.dev=no" -o "$work/terraform-bin" .
got=$(CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=/dev/null "$work/terraform-bin" version 2>/dev/null | head -1)
[ "$got" = "Terraform $version" ] || { echo "build-terraform: the built terraform says \"$got\", not Terraform $version" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
mv "$work/terraform-bin" "$out"
echo "build-terraform: $out ($got, local-state backends only)"
