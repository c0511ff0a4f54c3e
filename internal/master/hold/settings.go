package hold

import "strings"

// The names of the settings both runtimes keep on disk: a setting the local supervisor's
// supervisor.json and the host's master.conf both hold has one name and one unit, a JSON key
// in the one and, upper-cased (ShellName), a shell variable in the other. Hooks get it as
// REDLOCK_ + ShellName in their environment.
const (
	// SettingRestartDelayMS is the restart delay, a whole number of milliseconds: the
	// name the deployment record publishes it under too.
	SettingRestartDelayMS = FieldRestartDelayMS
)

// ShellName is setting's name as a variable in the host's shell files and hooks'
// environment ("restart_delay_ms" -> "RESTART_DELAY_MS").
func ShellName(setting string) string { return strings.ToUpper(setting) }
