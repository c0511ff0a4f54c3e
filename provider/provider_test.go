package provider

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/localmasters"
	"github.com/redlock-kit/redlock-kit/internal/master/local"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// TestMain lets the test binary be the supervisor: redlock_master spawns os.Executable()
// with "supervise <data dir>", which in tests is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "supervise" {
		os.Exit(supervisor.Main(os.Args[2]))
	}
	// The tests poll masters that are down on purpose; go-redis would log every refused dial.
	redis.SetLogger(quietLogger{})
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Masters restart on their port and destroy checks that it is free again: on an address
	// of this process's own, no other test process (run side by side by make test) takes it.
	claim, err := localmasters.ClaimLoopback()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer claim.Release()
	testBind = claim.Host
	if err := useWriteOnlyTerraform(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// A provider of its own for each terraform command, as terraform starts one process per
	// command: the provider keeps the data dirs planned in it (dataDirClaims), and one
	// instance shared by the whole test process kept every test's claims, so a finished
	// test's dir whose inode a parallel test's new dir reused read as "shared by two masters".
	testAccProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
		"redlock": func() (tfprotov6.ProviderServer, error) {
			return providerserver.NewProtocol6WithError(&redlockProvider{version: "test", bind: testBind})()
		},
	}
	return m.Run()
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// testAccProviderFactories serves the provider in-process to the real terraform binary on
// PATH: no registry, no mirror. Its masters bind testBind unless a config says otherwise.
var testAccProviderFactories map[string]func() (tfprotov6.ProviderServer, error)

// testBind is the loopback address this test process claimed (TestMain).
var testBind string

// stopDataDir stops whatever a test left running in dir, by the pids recorded there:
// cleanly first, then SIGKILL.
func stopDataDir(t *testing.T, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return
	}
	if err := supervisor.Stop(ctx, dir); err != nil {
		t.Logf("cleanup: supervisor.Stop(%s): %v", dir, err)
	}
	if killed := local.KillLeftovers(dir); len(killed) > 0 {
		t.Errorf("cleanup: had to SIGKILL pids %v in %s", killed, dir)
	}
}
