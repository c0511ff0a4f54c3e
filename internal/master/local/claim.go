package local

import (
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/redlock-kit/redlock-kit/internal/master/local/dirid"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// Two masters must never share a data dir: they would overwrite each other's redis.conf and
// supervisor.json, and the second supervisor is refused by the first one's lock. Terraform
// plans each resource on its own, so two redlock_master resources of one configuration with
// the same data_dir both pass the plan while neither runs; their creates then run in the
// same provider process, where the first to claim the dir wins and the other fails naming
// it. A dir already run by a supervisor is refused by CheckDataDirFree (at plan, and again at
// create).

var claims = struct {
	sync.Mutex
	byDir map[string]string // dirid.Key of the data dir -> name of the master being created there
}{byDir: map[string]string{}}

// claimDataDir reserves dir for the master name while it is created by this process. The
// error names the master that holds the claim; release ends the claim. The claim is on the
// directory, not its spelling (dirid.Key): a symlink to a dir being created is that dir.
func claimDataDir(dir, name string) (release func(), err error) {
	key := dirid.Key(dir)
	claims.Lock()
	defer claims.Unlock()
	if other, ok := claims.byDir[key]; ok {
		return nil, fieldError("data_dir", "Two masters share a data_dir",
			fmt.Sprintf("data_dir %s is also the data_dir of master %q (by this or another spelling), created in the "+
				"same apply: two masters cannot share a data dir (they would overwrite each other's redis.conf and AOF). "+
				"Give master %q its own data_dir.", filepath.Clean(dir), other, name))
	}
	claims.byDir[key] = name
	return func() {
		claims.Lock()
		defer claims.Unlock()
		delete(claims.byDir, key)
	}, nil
}

// CheckDataDirFree refuses a data dir run by a live supervisor (proven by /proc): another
// master owns it. The error names that master (from the dir's redlock-master.json) and its
// supervisor pid. A dir where nothing runs, or only a redis-server left without its
// supervisor (Start stops it cleanly and takes the dir over), passes. So does a dir whose
// supervisor config was removed under a live supervisor: that master is damaged, Refresh
// plans its replacement, which stops it by pid before the create (Start refuses the dir if
// it still runs then).
func CheckDataDirFree(dir string) error {
	st, err := supervisor.Inspect(dir)
	if err != nil || !st.SupervisorAlive {
		return nil
	}
	if _, err := supervisor.LoadConfig(dir); err != nil {
		return nil
	}
	who := "another master"
	if r, err := readRecord(dir); err == nil && r.Name != "" {
		who = "master " + strconv.Quote(r.Name)
	}
	return fieldError("data_dir", "data_dir is in use",
		fmt.Sprintf("data_dir %s is run by the supervisor (pid %d) of %s: two masters cannot share a data dir. Choose "+
			"another data_dir, or bring that master under Terraform with `terraform import <address> %s`.",
			dir, st.SupervisorPID, who, dir))
}

// CheckOrphanOwner refuses, for the master name, a data dir where another master's
// redis-server still serves without its supervisor (its record names that master): Start
// would stop it and take the dir over, though that master's own state still plans to replace
// it there (and its destroy would remove the dir). A dir of the same master, or one whose
// record names none, passes: a master created again where its supervisor died takes its own
// dir back. name "" (not known yet) passes.
func CheckOrphanOwner(dir, name string) error {
	if name == "" {
		return nil
	}
	st, err := supervisor.Inspect(dir)
	if err != nil || st.SupervisorAlive || !st.RedisAlive {
		return nil
	}
	r, err := readRecord(dir)
	if err != nil || r.Name == "" || r.Name == name {
		return nil
	}
	return fieldError("data_dir", "data_dir is in use",
		fmt.Sprintf("data_dir %s: redis-server (pid %d) of master %q still serves there without its supervisor. Two masters "+
			"cannot share a data dir: choose another data_dir for master %q, or apply master %q's configuration first (its "+
			"plan replaces the unsupervised server) or destroy it.", dir, st.RedisPID, r.Name, name, r.Name))
}

// CheckPortFree refuses a port something already listens on at bind (it tries to listen
// there). Port 0 (any free port) passes.
func CheckPortFree(bind string, port int) error {
	if port == 0 {
		return nil
	}
	if err := portFree(bind, port); err != nil {
		return fieldError("port", "Port already in use",
			fmt.Sprintf("port %d on %s is already in use (%v): choose another port, or leave port out to pick a free one.",
				port, bind, err))
	}
	return nil
}
