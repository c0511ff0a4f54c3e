// Package monitoring holds the Prometheus rules for a Redlock deployment (redlock.rules.yml,
// unit-tested by promtool with redlock.rules.test.yml: scripts/monitoring-check.sh) and a
// Grafana dashboard built from the same metrics. Its Go tests check that every metric the
// rules and the dashboard name exists: in a real scrape of Debian's redis_exporter (logged in
// as the monitoring user) and node_exporter, in lockagent/redlockprom's registry, and in the
// host's state file (testdata/redlock.prom; docs/monitoring.md has the contract).
package monitoring
