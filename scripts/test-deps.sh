#!/usr/bin/env bash
# Installs what the tests, lint and docs checks need (make test-deps; make test and CI call it),
# then what make demo needs (scripts/deps.sh):
#   one apt-get call for every missing Debian package, run in the background while the Go tools
#   build (its output in build/test-deps-apt.log, shown when it fails): redis-server; for the
#   host tests (internal/hostlab) and unless REDLOCK_HOSTS=0, the tools that run Debian
#   containers: systemd-nspawn (systemd-container), debootstrap (builds the host image once),
#   nft (nftables), ip (iproute2), nsenter/mount (util-linux), and chromium (the chaos report's
#   headless screenshot test); unless REDLOCK_EXPORTERS=0, promtool and the two exporters whose
#   real scrapes the monitoring tests read (prometheus, prometheus-redis-exporter,
#   prometheus-node-exporter; installed without starting their services); spin (make model);
#   node and npm (nodejs, npm: the node-redlock interop test, lockagent/redlock
#   TestForeignClientInterop, which runs npm ci on its own lock file);
#   when the terraform on PATH is older than 1.11 or missing, v1.11.4 into
#   ./bin/terraform-1.11.4 for the write-only password tests, also in the background
#   (scripts/build-terraform.sh: local-state backends only; scripts/deps.sh then uses the same
#   binary as ./bin/terraform when there is no terraform >= 1.5 on PATH);
#   staticcheck and terraform-docs (make module-docs), pinned, into ./bin; as root, the host
#   tests' Debian image into its cache (internal/hostlab/cmd/hostlab-image), in the background.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin build

# Background jobs, each in a process group of its own (set -m) so that a failed or interrupted
# run stops all of it; wait_for checks each one's exit status.
jobs_started=()
stop_jobs() { local pid; for pid in "${jobs_started[@]}"; do kill -- "-$pid" 2>/dev/null || true; done; }
trap stop_jobs EXIT
wait_for() { # wait_for PID WHAT LOG
  local status=0 pid kept=()
  wait "$1" || status=$?
  for pid in "${jobs_started[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
  jobs_started=("${kept[@]}")
  if [ "$status" != 0 ]; then
    cat "$3" >&2
    echo "test-deps: $2 failed (exit $status; above, and in $3)" >&2
    exit 1
  fi
}

# Debian packages: command -> package, for those that are missing.
missing=""
need() { # need COMMAND PACKAGE
  if ! command -v "$1" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$1" ] && ! [ -x "/sbin/$1" ]; then
    case " $missing " in *" $2 "*) ;; *) missing="$missing $2" ;; esac
  fi
}
[ -n "${REDLOCK_SERVER_BINARY:-}" ] || need redis-server redis-server
if [ "${REDLOCK_HOSTS:-1}" != 0 ]; then
  for pair in systemd-nspawn:systemd-container debootstrap:debootstrap nft:nftables ip:iproute2 \
      nsenter:util-linux chroot:coreutils chromium:chromium; do
    need "${pair%%:*}" "${pair#*:}"
  done
fi
# Spin, for make model (CI's model check); gcc builds its verifier and is on the machine.
need spin spin
# Node and npm, for node-redlock beside the kit (lockagent/redlock/testdata/interop-node).
need node nodejs
need npm npm
if [ "${REDLOCK_EXPORTERS:-1}" != 0 ]; then
  need promtool prometheus
  need prometheus-redis-exporter prometheus-redis-exporter
  need prometheus-node-exporter prometheus-node-exporter
fi
apt_pid=""
if [ -n "$missing" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "test-deps: tests need:$missing (no apt-get here: install them by hand; REDLOCK_HOSTS=0 skips the host tests' tools, REDLOCK_EXPORTERS=0 the exporters)" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "test-deps: installing$missing needs root (or sudo); REDLOCK_HOSTS=0 skips the host tests' tools, REDLOCK_EXPORTERS=0 the exporters" >&2; exit 1; }
    sudo=sudo
  fi
  apt_log=build/test-deps-apt.log
  echo "test-deps: installing with apt-get, in the background (log: $apt_log):$missing"
  # A policy-rc.d that refuses keeps the packages from starting their servers here (the
  # Prometheus and exporter services, redis on 6379); the tests start their own.
  policy=/usr/sbin/policy-rc.d
  set -m
  (
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod 0755 "$policy"
      trap '$sudo rm -f "$policy"' EXIT
    fi
    $sudo apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
  ) >"$apt_log" 2>&1 &
  apt_pid=$!
  set +m
  jobs_started+=("$apt_pid")
fi

# The write-only password tests (provider, TF_ACC) need terraform >= 1.11; everything else
# runs with terraform >= 1.5. When the one on PATH is older, or there is none, build v1.11.4
# into ./bin/terraform-1.11.4, which those tests then use (and make demo too, when there is no
# terraform >= 1.5): scripts/build-terraform.sh, HashiCorp's released source with only the
# local-state backends, which is all the tests use.
build_terraform_wo() {
  echo "test-deps: terraform ${tf_current:-(none)} on PATH is older than 1.11; building v1.11.4 into ./bin/terraform-1.11.4 for the write-only tests (a few minutes, once)"
  scripts/build-terraform.sh v1.11.4 bin/terraform-1.11.4
}
tf_current=$(TF_CLI_CONFIG_FILE=/dev/null terraform version -json 2>/dev/null | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/\1/p' || true)
tf_pid=""
if [ "$(printf '%s\n1.11.0\n' "$tf_current" | sort -V | head -1)" != 1.11.0 ]; then
  if "$PWD/bin/terraform-1.11.4" version 2>/dev/null | grep '^Terraform v1\.11\.4$' >/dev/null; then
    echo "test-deps: write-only tests: $PWD/bin/terraform-1.11.4 (Terraform v1.11.4)"
  else
    tf_log=build/test-deps-terraform.log
    echo "test-deps: building terraform v1.11.4 in the background (log: $tf_log)"
    # Its sources and modules download now; its compile waits for the staticcheck and
    # terraform-docs builds below (BUILD_TERRAFORM_AFTER), so that the standard library
    # compiles once for the three instead of side by side.
    tf_gate=build/.test-deps-terraform-gate
    rm -f "$tf_gate"
    set -m
    BUILD_TERRAFORM_AFTER=$PWD/$tf_gate build_terraform_wo >"$tf_log" 2>&1 &
    tf_pid=$!
    set +m
    jobs_started+=("$tf_pid")
  fi
fi

# The linter, pinned, into ./bin (make lint).
staticcheck_version=v0.8.2
if ! "$PWD/bin/staticcheck" -version 2>/dev/null | grep "${staticcheck_version#v}" >/dev/null; then
  echo "test-deps: installing staticcheck $staticcheck_version into ./bin"
  GOBIN="$PWD/bin" go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi
echo "test-deps: $("$PWD/bin/staticcheck" -version)"

# terraform-docs, pinned, into ./bin (make module-docs, make check-docs). Built from a
# throwaway module that requires it, so the module's own go.mod/go.sum pin its dependencies
# and no "latest" lookup is needed (go install pkg@version also checks the module's
# deprecation through the version list, which a proxy may refuse).
terraform_docs_version=v0.22.0
if ! "$PWD/bin/terraform-docs" --version 2>/dev/null | grep "$terraform_docs_version" >/dev/null; then
  echo "test-deps: installing terraform-docs $terraform_docs_version into ./bin"
  tfd_tmp=$(mktemp -d)
  printf 'module terraform-docs-install\n\ngo 1.24\n\nrequire github.com/terraform-docs/terraform-docs %s\n' "$terraform_docs_version" >"$tfd_tmp/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/terraform-docs/terraform-docs"\n' >"$tfd_tmp/tools.go"
  (cd "$tfd_tmp" && go mod tidy && GOBIN="$OLDPWD/bin" go install github.com/terraform-docs/terraform-docs) || { rm -rf "$tfd_tmp"; exit 1; }
  rm -rf "$tfd_tmp"
fi
echo "test-deps: $("$PWD/bin/terraform-docs" --version)"
[ -z "$tf_pid" ] || touch "$tf_gate"

[ -z "$apt_pid" ] || wait_for "$apt_pid" "apt-get install$missing" "$apt_log"
image_pid=""
if [ "${REDLOCK_HOSTS:-1}" != 0 ]; then
  echo "test-deps: host tests: $(systemd-nspawn --version 2>/dev/null | sed -n 1p), debootstrap $(dpkg-query -W -f='${Version}' debootstrap 2>/dev/null || echo '?'), $(nft --version 2>/dev/null || /usr/sbin/nft --version)"
  # The host tests' Debian image (debootstrap from this machine's apt sources, about a minute
  # of downloads, once per package list): built here, beside the terraform build, rather than
  # inside the first test that boots a lab. Only as root, like the tests that boot hosts.
  if [ "$(id -u)" = 0 ]; then
    image_log=build/test-deps-hostlab-image.log
    echo "test-deps: host image: building it when missing, in the background (log: $image_log)"
    set -m
    go run ./internal/hostlab/cmd/hostlab-image >"$image_log" 2>&1 &
    image_pid=$!
    set +m
    jobs_started+=("$image_pid")
  fi
fi
if [ -n "$tf_pid" ]; then
  wait_for "$tf_pid" "building terraform v1.11.4" "$tf_log"
  rm -f "$tf_gate"
  echo "test-deps: write-only tests: $PWD/bin/terraform-1.11.4 ($("$PWD/bin/terraform-1.11.4" version 2>/dev/null | sed -n 1p))"
fi
if [ -n "$image_pid" ]; then
  wait_for "$image_pid" "building the host image (go run ./internal/hostlab/cmd/hostlab-image)" "$image_log"
  echo "test-deps: host image: $(tail -1 "$image_log")"
fi

# What make demo needs: redis-server and terraform are there now (a fresh machine's terraform
# is the v1.11.4 above, linked as ./bin/terraform: nothing more to build).
scripts/deps.sh
