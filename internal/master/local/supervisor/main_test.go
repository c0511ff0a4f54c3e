package supervisor

import (
	"fmt"
	"os"
	"testing"
)

// The test binary doubles as the supervisor executable, like the provider binary does:
// Spawn(os.Executable(), "supervise", dir) re-executes it in supervisor mode.
// "spawn-then-exit <dir>" plays the provider plugin that terraform kills after apply: it
// spawns a supervisor and exits at once.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 {
		switch os.Args[1] {
		case "supervise":
			os.Exit(Main(os.Args[2]))
		case "spawn-then-exit":
			exe, err := os.Executable()
			if err == nil {
				var pid int
				if pid, err = Spawn(exe, []string{"supervise", os.Args[2]}, os.Args[2]); err == nil {
					fmt.Println(pid)
					os.Exit(0)
				}
			}
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}
