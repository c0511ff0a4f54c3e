package supervisor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
)

// configDrift says how the server's config file on disk differs from the one the provider
// rendered (Config.ConfigSHA256): "" when it does not, or when nothing was rendered to
// compare with. The running server may still run safe values (the audit reads those), but
// its next start, after a crash too, loads the file on disk. rendered is the file's text as
// the supervisor last saw it match (nil: never), to name the settings that changed.
func configDrift(c Config, rendered []byte) (drift string, now []byte) {
	if c.ConfigSHA256 == "" {
		return "", nil
	}
	now, err := os.ReadFile(c.ConfigFile)
	if err != nil {
		return fmt.Sprintf("%s cannot be read (%v): the next start of the server cannot load the config the runtime rendered", c.ConfigFile, err), nil
	}
	sum := sha256.Sum256(now)
	if hex.EncodeToString(sum[:]) == c.ConfigSHA256 {
		return "", now
	}
	drift = fmt.Sprintf("%s changed on disk since the runtime rendered it (sha256 %.12s, rendered %.12s)", c.ConfigFile, hex.EncodeToString(sum[:]), c.ConfigSHA256)
	if rendered != nil {
		if names := changedSettings(rendered, now); len(names) > 0 {
			drift += ": " + strings.Join(names, ", ")
		}
	}
	return drift, now
}

// loadedDrift is the drift to publish: the file's now, or when the file is as rendered but
// the server was started on one that was not (atStart), that, for the server's whole run.
// Putting the file back does not change what the server loaded, and the audit reads only
// some settings live (not dir, the AOF's names, modules or renamed commands).
func loadedDrift(now, atStart string) string {
	if now != "" || atStart == "" {
		return now
	}
	return "the server was started on a config file that was not the rendered one (" + atStart +
		"); the file is as rendered now, but the server runs on what it loaded: restart it"
}

// changedSettings names the directives whose lines differ between two config texts.
func changedSettings(a, b []byte) []string {
	lines := func(text []byte) map[string]bool {
		set := map[string]bool{}
		for _, l := range strings.Split(string(text), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				set[l] = true
			}
		}
		return set
	}
	la, lb := lines(a), lines(b)
	names := map[string]bool{}
	for l := range la {
		if !lb[l] {
			names[strings.Fields(l)[0]] = true
		}
	}
	for l := range lb {
		if !la[l] {
			names[strings.Fields(l)[0]] = true
		}
	}
	var out []string
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
