package hold

import (
	"strings"
	"time"
)

// The names of the settings both runtimes keep on disk: a setting the local supervisor's
// supervisor.json and the host's master.conf both hold has one name and one unit, a JSON key
// in the one and, upper-cased (ShellName), a shell variable in the other. Hooks get it as
// REDLOCK_ + ShellName in their environment. The restart delay is FieldRestartDelayMS, the
// name the deployment record publishes it under (deployment.go): one name, whole
// milliseconds, in every file, record and environment.
const (
	// SettingMaxRestartDelayMS is MaxRestartDelay in whole milliseconds, for the host
	// script, which reads it beside the delay.
	SettingMaxRestartDelayMS = "max_restart_delay_ms"
)

// MaxRestartDelay bounds every restart delay a master may be configured with, and so every
// value either runtime reads from disk: a delay above it, or a hold or floor that ends later
// than now + the largest delay ever configured, is unreadable, and unreadable fails closed
// (the hold counts the configured delay from now, or the master stays down with a message
// naming the file). A week: a master held longer is a master gone.
const MaxRestartDelay = 7 * 24 * time.Hour

// ShellName is setting's name as a variable in the host's shell files and hooks'
// environment ("restart_delay_ms" -> "RESTART_DELAY_MS").
func ShellName(setting string) string { return strings.ToUpper(setting) }

// CeilMS is d rounded up to a whole millisecond, the unit every file and record keeps a
// delay in: a delay written down never shortens.
func CeilMS(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}
