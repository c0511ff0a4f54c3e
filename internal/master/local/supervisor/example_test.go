package supervisor_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// The provider's side of a master's life: describe it, start its supervisor detached, wait
// until it serves, and later stop it cleanly. The executable must call supervisor.Main when
// started as "<exe> supervise <data dir>".
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dataDir := "/var/lib/redlock/master-1" // holds redis.conf, rendered by internal/redisconf
	err := supervisor.WriteConfig(dataDir, supervisor.Config{
		Name: "master-1", ServerBinary: "redis-server", ConfigFile: dataDir + "/redis.conf",
		DataDir: dataDir, Addr: "127.0.0.11:7379", AdminPassword: os.Getenv("ADMIN_PASSWORD"),
		RestartDelay: 31 * time.Second, // max lock TTL 30s + drift margin
		Hooks:        supervisor.Hooks{OnCrash: []string{"/usr/local/bin/page-oncall"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if until, hold := supervisor.HoldUntil(dataDir, 31*time.Second); hold {
		fmt.Println("master-1 crashed earlier; it will serve again at", until)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Println(err)
		return
	}
	pid, err := supervisor.Spawn(exe, []string{"supervise", dataDir}, dataDir)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := supervisor.WaitReady(ctx, dataDir, pid)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("redis-server pid", st.RedisPID, "supervised by", st.SupervisorPID)

	if err := supervisor.Stop(ctx, dataDir); err != nil {
		fmt.Println(err)
	}
	fmt.Println("stopped cleanly:", supervisor.CleanStop(dataDir))
}
