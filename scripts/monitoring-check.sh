#!/usr/bin/env bash
# Checks the Prometheus rules in monitoring/: syntax (promtool check rules), behaviour
# (promtool test rules), that every alert has a test where it fires and one where it does
# not, a negative control (the same tests against no rules at all must fail), and that every
# metric they name exists in real scrapes (go test ./monitoring/). promtool and the exporters
# come from Debian's packages, installed here when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# promtool (package prometheus) and the two exporters whose real scrapes the Go test reads.
need=()
command -v promtool >/dev/null || need+=(prometheus)
command -v prometheus-redis-exporter >/dev/null || need+=(prometheus-redis-exporter)
command -v prometheus-node-exporter >/dev/null || need+=(prometheus-node-exporter)
if [ ${#need[@]} -gt 0 ]; then
  echo "monitoring-check: installing ${need[*]} (Debian packages)"
  if [ "$(id -u)" -ne 0 ]; then
    echo "monitoring-check: installing ${need[*]} needs root: apt-get install ${need[*]}" >&2
    exit 1
  fi
  # Install only: a policy-rc.d that refuses keeps the package from starting its server here.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >/dev/null
fi
promtool --version | sed -n 1p

rules=monitoring/redlock.rules.yml
tests=monitoring/redlock.rules.test.yml
promtool check rules "$rules"
promtool check config monitoring/prometheus.example.yml
promtool test rules "$tests"

# Every alert needs a firing test (an exp_alerts list with entries after its alertname) and a
# non-firing one (exp_alerts: []).
missing=0
alerts=$(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' "$rules")
for a in $alerts; do
  if ! grep -Eq "alertname: $a, exp_alerts: \[\]" "$tests"; then
    echo "monitoring-check: alert $a has no test where it does not fire (exp_alerts: [])" >&2
    missing=1
  fi
  if ! grep -A2 -E "^ *alertname: $a$" "$tests" | grep -q 'exp_labels:'; then
    echo "monitoring-check: alert $a has no test where it fires (exp_alerts with exp_labels)" >&2
    missing=1
  fi
done
[ "$missing" -eq 0 ] || exit 1
echo "monitoring-check: $(echo "$alerts" | wc -w) alerts, each with a firing and a non-firing test"

# Negative control: with no rules, the firing tests must fail.
control=$(mktemp -d)
trap 'rm -rf "$control"; rm -f "${policy:-/nonexistent-policy}"' EXIT
printf 'groups: []\n' >"$control/redlock.rules.yml"
cp "$tests" "$control/"
if promtool test rules "$control/$(basename "$tests")" >"$control/out" 2>&1; then
  echo "monitoring-check: negative control failed: the tests pass without any rule" >&2
  exit 1
fi
echo "monitoring-check: negative control ok (the tests fail without the rules: $(grep -c 'alertname:' "$control/out") expectations unmet)"

# Every metric the rules and the dashboard name exists: real scrapes of redis_exporter (as the
# monitoring user, with the hosts' flags) and node_exporter (the host's state file), and
# redlockprom's registry (monitoring/*_test.go).
REDLOCK_REQUIRE_EXPORTERS=1 go test -count=1 ./monitoring/
