package validation_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// Run validates three local masters (started here by the project's test harness; in your
// pipeline, the masters the redlock-cluster module deployed) and prints the verdict.
func Example() {
	c, err := redistest.New(redistest.Options{Masters: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	// The kit's runtime publishes the restart delay it enforces on every master.
	if err := c.PublishDeployment(11 * time.Second); err != nil {
		fmt.Println(err)
		return
	}
	cfg := &agentconfig.Config{ // what the module's agent_config output holds
		Endpoints: c.Addrs(),
		Username:  redistest.LockUser, Password: redistest.LockPassword,
		AdminUsername: "default", AdminPassword: redistest.AdminPassword,
		MaxLockTTL:   agentconfig.Duration{Duration: 10 * time.Second},
		RestartDelay: agentconfig.Duration{Duration: 11 * time.Second},
	}
	rep, err := validation.Run(context.Background(), cfg, validation.Options{Clients: 4, Duration: time.Second})
	if err != nil {
		fmt.Println("could not finish:", err)
		return
	}
	fmt.Println(rep.Verdict, rep.ExitCode())
	// Output: SAFE 0
}
