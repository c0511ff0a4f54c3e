#!/usr/bin/env bash
# Installs what `make demo` needs and nothing else (the test and lint tools are
# scripts/test-deps.sh, `make test-deps`):
#   redis-server via apt-get when it is not on PATH;
#   terraform from PATH, else ./bin/terraform: the v1.11.4 that make test-deps built when it is
#   there (so a fresh CI machine builds one terraform, not two), else v1.5.7 built from source
#   (the cheaper build: 845 packages outside the standard library, against 1,217 for v1.11.4).
# `scripts/deps.sh redis-server` or `scripts/deps.sh terraform` does only that part (make demo
# builds terraform side by side with the provider: scripts/demo-build.sh).
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

terraform_cli() {
  if ! command -v terraform >/dev/null 2>&1; then
    if "$PWD/bin/terraform-1.11.4" version 2>/dev/null | grep -q '^Terraform v1\.11\.4$'; then
      echo "deps: terraform not on PATH; using the v1.11.4 that make test-deps built (./bin/terraform -> terraform-1.11.4)"
      ln -sfn terraform-1.11.4 "$PWD/bin/terraform"
    else
      echo "deps: terraform not on PATH; building v1.5.7 into ./bin (a few minutes, once)"
      # No symbol table, no DWARF, no local paths: a shorter link; nobody debugs this terraform.
      GOBIN="$PWD/bin" go install -trimpath -ldflags "-s -w" github.com/hashicorp/terraform@v1.5.7
    fi
  fi
  echo "deps: $(command -v terraform) ($(TF_CLI_CONFIG_FILE=/dev/null terraform version 2>/dev/null | head -1))"
}

case "${1:-all}" in
  all) redis_server; terraform_cli ;;
  redis-server) redis_server ;;
  terraform) terraform_cli ;;
  *) echo "usage: scripts/deps.sh [redis-server|terraform]" >&2; exit 2 ;;
esac
