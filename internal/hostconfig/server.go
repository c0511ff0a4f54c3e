package hostconfig

import (
	"fmt"
	"sort"
	"strings"
)

// Server is a Debian package that provides a master's server, with the names its package
// and systemd unit use. The drop-in extends the package's own unit, so its sandbox stays.
type Server struct {
	Package string // Debian package: redis-server or valkey-server
	Unit    string // the package's systemd unit
	Binary  string // the server executable
	CLI     string // the package's command-line client (the stop step uses it)
	User    string // the user the unit runs as: it owns the server config (0600: it holds the passwords) and the TLS key
	Group   string // the group the unit runs as
	DataDir string // the unit's writable data dir: the AOF and the restart records live here
	// PIDFile is the server's pidfile, in its data dir: <DataDir>/<Unit without .service>.pid,
	// where the gate script looks for it. After a clean stop the script writes a token there
	// that the clean marker names; a server started with the master's config writes its pid
	// over it, and removes it at a clean exit. Not the unit's PIDFile= (the drop-in clears
	// that: systemd removes the file after every stop, and the runtime dir, /run/redis, too).
	PIDFile string
}

// DefaultServer is the package used when none is named.
const DefaultServer = "redis-server"

// Servers are the packages a host can run, by package name. valkey-server is in Debian's
// bookworm-backports (8.0) and in trixie.
var Servers = map[string]Server{
	"redis-server": {
		Package: "redis-server", Unit: "redis-server.service", Binary: "/usr/bin/redis-server",
		CLI: "/usr/bin/redis-cli", User: "redis", Group: "redis", DataDir: "/var/lib/redis", PIDFile: "/var/lib/redis/redis-server.pid",
	},
	"valkey-server": {
		Package: "valkey-server", Unit: "valkey-server.service", Binary: "/usr/bin/valkey-server",
		CLI: "/usr/bin/valkey-cli", User: "valkey", Group: "valkey", DataDir: "/var/lib/valkey", PIDFile: "/var/lib/valkey/valkey-server.pid",
	},
}

// ServerNames lists the supported package names, sorted.
func ServerNames() []string {
	names := make([]string, 0, len(Servers))
	for n := range Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupServer returns the named package ("" is DefaultServer) or an error naming the choices.
func LookupServer(name string) (Server, error) {
	if name == "" {
		name = DefaultServer
	}
	s, ok := Servers[name]
	if !ok {
		return Server{}, fmt.Errorf("server = %q is not a supported package: use one of %s", name,
			strings.Join(ServerNames(), ", "))
	}
	return s, nil
}
