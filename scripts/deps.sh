#!/usr/bin/env bash
# Installs what `make demo` needs and nothing else (the test and lint tools are
# scripts/test-deps.sh, `make test-deps`):
#   redis-server via apt-get when it is not on PATH;
#   terraform from PATH when it is >= 1.5 (what examples/local-five and modules/redlock-cluster
#   require; yours is always the one used then), else ./bin/terraform -> terraform-1.11.4: the
#   one make test-deps built when it is there, else built now by scripts/build-terraform.sh
#   from HashiCorp's released v1.11.4 source with only the local-state backends and no S3/GCS
#   module getters (the remote-state backends with SDKs of their own, s3, gcs, azurerm and the
#   rest, and the S3/GCS module downloads left out: their SDKs are most of terraform's compile,
#   and nothing here uses them). One terraform, v1.11.4, serves the demo and the tests (the
#   write-only tests need >= 1.11).
# `scripts/deps.sh redis-server` or `scripts/deps.sh terraform` does only that part (make demo
# downloads terraform beside the provider build and compiles it after: scripts/demo-build.sh,
# which passes BUILD_TERRAFORM_AFTER through to scripts/build-terraform.sh and asks
# `scripts/deps.sh terraform-ready` and `scripts/deps.sh terraform-built` whether there is a
# build to do).
set -euo pipefail
cd "$(dirname "$0")/.."

redis_server() {
  local server=${REDLOCK_SERVER_BINARY:-redis-server} sudo=""
  if ! command -v "$server" >/dev/null 2>&1; then
    if [ "$server" != redis-server ]; then
      echo "deps: $server is not on PATH; install it or unset REDLOCK_SERVER_BINARY" >&2
      exit 1
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
      echo "deps: redis-server is missing and apt-get is not available: install redis-server (>= 7.0) by hand" >&2
      exit 1
    fi
    if [ "$(id -u)" != 0 ]; then
      command -v sudo >/dev/null 2>&1 || { echo "deps: installing redis-server needs root (or sudo): apt-get install redis-server" >&2; exit 1; }
      sudo=sudo
    fi
    echo "deps: installing redis-server with apt-get"
    $sudo apt-get update -qq
    # The Debian package may start a system service on 6379; the kit never uses it.
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends redis-server >/dev/null
  fi
  echo "deps: $(command -v "$server") ($("$server" --version | awk '{print $3}'))"
}

# terraform_version BINARY: its version (1.11.4), empty when there is none.
terraform_version() {
  TF_CLI_CONFIG_FILE=/dev/null "$1" version -json 2>/dev/null | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/\1/p' || true
}
# user_terraform: the terraform on PATH outside ./bin (make puts ./bin first), empty if none.
user_terraform() {
  local dir rest=""
  local IFS=:
  for dir in $PATH; do [ "$dir" = "$PWD/bin" ] || [ "$dir" = bin ] || rest="${rest:+$rest:}$dir"; done
  PATH=$rest command -v terraform || true
}
# terraform_ready: there is a terraform >= 1.5 on PATH, outside ./bin.
terraform_ready() {
  local tf have
  tf=$(user_terraform)
  [ -n "$tf" ] || return 1
  have=$(terraform_version "$tf")
  [ -n "$have" ] && [ "$(printf '%s\n1.5.0\n' "$have" | sort -V | head -1)" = 1.5.0 ]
}

# terraform_built: ./bin/terraform-1.11.4 is there (make test-deps or an earlier make demo).
terraform_built() {
  [ "$(terraform_version "$PWD/bin/terraform-1.11.4")" = 1.11.4 ]
}

terraform_cli() {
  local tf have why
  tf=$(user_terraform)
  if terraform_ready; then
    # Yours is used: drop the ./bin/terraform an earlier run put there (a link to the one built
    # here, or the v1.5.7 older kits built), which make (./bin first on PATH) would prefer.
    if [ -e "$PWD/bin/terraform" ] || [ -L "$PWD/bin/terraform" ]; then
      rm -f "$PWD/bin/terraform"
      echo "deps: $tf is >= 1.5: removed ./bin/terraform (built here earlier), so make uses yours"
    fi
  else
    have=$([ -z "$tf" ] || terraform_version "$tf")
    why="no terraform on PATH"
    [ -z "$tf" ] || why="$tf (${have:-version unknown}) is older than 1.5"
    if terraform_built; then
      echo "deps: $why; using ./bin/terraform-1.11.4 (built by make test-deps or an earlier make demo)"
    else
      echo "deps: $why; building v1.11.4 into ./bin (local-state backends only, no S3/GCS module getters; once)"
      scripts/build-terraform.sh v1.11.4 bin/terraform-1.11.4
    fi
    # make puts ./bin first on PATH: make demo and make test use this one.
    ln -sfn terraform-1.11.4 "$PWD/bin/terraform"
    tf=$PWD/bin/terraform
  fi
  echo "deps: $tf ($(TF_CLI_CONFIG_FILE=/dev/null "$tf" version 2>/dev/null | sed -n 1p))"
}

case "${1:-all}" in
  all) redis_server; terraform_cli ;;
  redis-server) redis_server ;;
  terraform) terraform_cli ;;
  terraform-ready) terraform_ready ;;
  terraform-built) terraform_built ;;
  *) echo "usage: scripts/deps.sh [redis-server|terraform|terraform-ready|terraform-built]" >&2; exit 2 ;;
esac
