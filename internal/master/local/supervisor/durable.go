package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A clean marker lets the next start skip the hold, so it is written only when the exit
// proves a durable shutdown: exit status 0 (or, for a server that is not our child, its
// process gone after our SHUTDOWN) is not enough, since a server with the AOF turned off
// also exits 0 and loses what it acknowledged.

// durableConfig reports why the server's persistence is not durable (the AOF on, fsynced
// before every reply), "" when it is. conf is CONFIG GET append* as the admin.
func durableConfig(conf map[string]string) string {
	if conf["appendonly"] != "yes" || conf["appendfsync"] != "always" {
		return fmt.Sprintf("appendonly %q, appendfsync %q (want yes, always)", conf["appendonly"], conf["appendfsync"])
	}
	return ""
}

// readDurableConfig reads the server's persistence settings as the admin. When they cannot
// be read (a changed password, a paused server), the server's log is the proof left: ""
// here, and durableExit decides.
func readDurableConfig(ctx context.Context, c Config) string {
	client := adminClient(c)
	defer client.Close()
	conf, err := client.ConfigGet(ctx, "append*").Result()
	if err != nil {
		return ""
	}
	return durableConfig(conf)
}

// configNamesLogFile reports whether the master's config file names a logfile.
func configNamesLogFile(c Config) bool {
	return serverLogPath(c) != filepath.Join(c.DataDir, LogFileName)
}

// serverLogPath is where the server logs: the config's logfile, else its stdout, which is
// supervisor.log.
func serverLogPath(c Config) string {
	if f, err := os.Open(c.ConfigFile); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			name, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
			if !ok || !strings.EqualFold(name, "logfile") {
				continue
			}
			value = strings.TrimSpace(value)
			if u, err := strconv.Unquote(value); err == nil {
				value = u
			}
			if value != "" {
				if !filepath.IsAbs(value) {
					value = filepath.Join(c.DataDir, value)
				}
				return value
			}
		}
	}
	return filepath.Join(c.DataDir, LogFileName)
}

// durableExit reports why the server's log does not prove that pid shut down durably (it
// fsynced its AOF at shutdown and said it is ready to exit), "" when it does.
func durableExit(c Config, pid int) string {
	path := serverLogPath(c)
	f, err := os.Open(path)
	if err != nil {
		return "its log cannot be read: " + err.Error()
	}
	defer f.Close()
	// The end of the log is enough: a shutdown is its last lines.
	if fi, err := f.Stat(); err == nil && fi.Size() > 1<<20 {
		_, _ = f.Seek(-(1 << 20), io.SeekEnd)
	}
	data, _ := io.ReadAll(f)
	prefix := []byte(strconv.Itoa(pid) + ":")
	fsynced, ready := false, false
	for _, line := range bytes.Split(data, []byte("\n")) {
		if !bytes.HasPrefix(line, prefix) {
			continue
		}
		switch {
		case bytes.Contains(line, []byte("oO0OoO0OoO0Oo")):
			// A start of a process with this pid: what an earlier one logged proves nothing.
			fsynced, ready = false, false
		case bytes.Contains(line, []byte("Calling fsync() on the AOF file")):
			fsynced = true
		case bytes.Contains(line, []byte("ready to exit")):
			ready = true
		}
	}
	switch {
	case !ready:
		return fmt.Sprintf("%s has no \"ready to exit\" line of pid %d", path, pid)
	case !fsynced:
		return fmt.Sprintf("%s shows no AOF fsync at the shutdown of pid %d (the AOF was off)", path, pid)
	}
	return ""
}
