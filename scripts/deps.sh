#!/usr/bin/env bash
# Installs what `make demo` needs and nothing else (the test and lint tools are
# scripts/test-deps.sh, `make test-deps`):
#   redis-server via apt-get when it is not on PATH;
#   terraform from PATH, else built from source (v1.5.7) into ./bin.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v "${REDLOCK_SERVER_BINARY:-redis-server}" >/dev/null 2>&1; then
  if [ "${REDLOCK_SERVER_BINARY:-redis-server}" != redis-server ]; then
    echo "deps: ${REDLOCK_SERVER_BINARY} is not on PATH; install it or unset REDLOCK_SERVER_BINARY" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: redis-server is missing and apt-get is not available: install redis-server (>= 7.0) by hand" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "deps: installing redis-server needs root (or sudo): apt-get install redis-server" >&2; exit 1; }
    sudo=sudo
  fi
  echo "deps: installing redis-server with apt-get"
  $sudo apt-get update -qq
  apt_updated=1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends redis-server >/dev/null
  # The Debian package may start a system service on 6379; the kit never uses it.
fi
echo "deps: $(command -v "${REDLOCK_SERVER_BINARY:-redis-server}") ($("${REDLOCK_SERVER_BINARY:-redis-server}" --version | awk '{print $3}'))"

if ! command -v terraform >/dev/null 2>&1; then
  echo "deps: terraform not on PATH; building v1.5.7 into ./bin (a few minutes, once)"
  GOBIN="$PWD/bin" go install github.com/hashicorp/terraform@v1.5.7
fi
echo "deps: $(command -v terraform) ($(TF_CLI_CONFIG_FILE=/dev/null terraform version 2>/dev/null | head -1))"

