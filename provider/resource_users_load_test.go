package provider

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// rotationWorker is one lock client process loop: `lockagent run` again and again on its
// own key, each run acquiring, renewing (the command outlives the TTL) and releasing, with
// the password its file has at that moment (what an application's config rollout changes).
type rotationWorker struct {
	cmd      *exec.Cmd
	pwFile   string
	log      string // one line per run: its exit code
	errs     string // stderr of the runs
	stopFile string
}

// rotationWorkerScript loops until the stop file exists; every lockagent run is a new
// process that logs in afresh.
const rotationWorkerScript = `
while [ ! -e "$STOP" ]; do
  LOCKAGENT_PASSWORD=$(cat "$PWFILE") "$AGENT" run --key "$KEY" --ttl 600ms --wait 30s -- sleep 0.9 2>>"$ERRS"
  echo "$?" >>"$LOG"
done
`

func buildLockagent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockagent")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/redlock-kit/redlock-kit/lockagent/cmd/lockagent").CombinedOutput()
	if err != nil {
		t.Fatalf("go build lockagent: %v\n%s", err, out)
	}
	return bin
}

func startRotationWorker(t *testing.T, agent string, c *redistest.Cluster, id int, password string) *rotationWorker {
	t.Helper()
	dir := t.TempDir()
	w := &rotationWorker{pwFile: filepath.Join(dir, "password"), log: filepath.Join(dir, "runs.log"),
		errs: filepath.Join(dir, "stderr.log"), stopFile: filepath.Join(dir, "stop")}
	w.setPassword(t, password)
	w.cmd = exec.Command("sh", "-c", rotationWorkerScript)
	w.cmd.Env = append(os.Environ(), "AGENT="+agent, "PWFILE="+w.pwFile, "LOG="+w.log, "ERRS="+w.errs, "STOP="+w.stopFile,
		fmt.Sprintf("KEY=job-%d", id), "LOCKAGENT_ENDPOINTS="+strings.Join(c.Addrs(), ","),
		"LOCKAGENT_USERNAME=billing", "LOCKAGENT_KEY_PREFIX=billing:")
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w.cmd.ProcessState != nil {
			return // stopAndCount waited for it
		}
		_ = os.WriteFile(w.stopFile, nil, 0o644)
		done := make(chan struct{})
		go func() { _ = w.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL) // its own process group: the loop and its lockagent
			<-done
		}
	})
	return w
}

func (w *rotationWorker) setPassword(t *testing.T, password string) {
	t.Helper()
	tmp := w.pwFile + ".new"
	if err := os.WriteFile(tmp, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, w.pwFile); err != nil {
		t.Fatal(err)
	}
}

// runs returns the exit codes of the runs so far.
func (w *rotationWorker) runs() []string {
	b, _ := os.ReadFile(w.log)
	return strings.Fields(string(b))
}

// waitRuns waits until the worker has finished n more successful runs than it had. A run
// refused its credentials (exit 77, WRONGPASS or NOAUTH: what a rotation without overlap
// causes) fails the wait at once. Other failed runs (a master that did not answer within the
// node timeout on a loaded machine, so the lock was lost: exit 70) are not what this test is
// about: they are counted, not fatal, and the worker goes on.
func (w *rotationWorker) waitRuns(n int) error {
	successes := func(runs []string) int {
		ok := 0
		for _, code := range runs {
			if code == "0" {
				ok++
			}
		}
		return ok
	}
	want := successes(w.runs()) + n
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		runs := w.runs()
		errs, _ := os.ReadFile(w.errs)
		for _, code := range runs {
			if code == "77" || bytes.Contains(errs, []byte("WRONGPASS")) || bytes.Contains(errs, []byte("NOAUTH")) {
				return fmt.Errorf("a lockagent run was refused its credentials (exit %s):\n%s", code, errs)
			}
		}
		if successes(runs) >= want {
			return nil
		}
		if w.cmd.ProcessState != nil {
			return fmt.Errorf("worker exited")
		}
	}
	return fmt.Errorf("worker finished %d successful runs of %d, want %d within 2 minutes", successes(w.runs()), len(w.runs()), want)
}

// TestAccUsers_rotationUnderLoad: separate lock client processes acquire, renew and release
// through a password rotation done by terraform: apply 1 adds the new password beside the
// old, the clients move to it one by one while they run, apply 2 retires the old one.
// No run is refused its credentials. The control: a client still on the old password after
// apply 2 is refused.
func TestAccUsers_rotationUnderLoad(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true})
	agent := buildLockagent(t)
	var workers []*rotationWorker
	const perPhase = 2 // runs each worker completes in every phase
	every := func(fn func(w *rotationWorker) error) resource.TestCheckFunc {
		return func(*terraform.State) error {
			for _, w := range workers {
				if err := fn(w); err != nil {
					return err
				}
			}
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: usersConfig(c, billingUser(billingPassword1)),
				Check: func(s *terraform.State) error {
					for i := range 4 {
						workers = append(workers, startRotationWorker(t, agent, c, i, billingPassword1))
					}
					return every(func(w *rotationWorker) error { return w.waitRuns(perPhase) })(s)
				},
			},
			{
				// Apply 1: both passwords. Then the clients' configs move, one at a time.
				Config:             usersConfig(c, billingUser(billingPassword2)),
				ExpectNonEmptyPlan: true,
				Check: every(func(w *rotationWorker) error {
					if err := w.waitRuns(1); err != nil {
						return err
					}
					w.setPassword(t, billingPassword2)
					return w.waitRuns(perPhase)
				}),
			},
			{
				// Apply 2: the old password is retired while the clients run.
				Config: usersConfig(c, billingUser(billingPassword2)),
				Check: resource.ComposeAggregateTestCheckFunc(
					every(func(w *rotationWorker) error { return w.waitRuns(perPhase) }),
					func(*terraform.State) error {
						// A loaded machine can make every master miss the node timeout
						// (exit 69, unavailable): that attempt says nothing, so it is made
						// again; a run that succeeds, or any other answer, fails the check.
						var out []byte
						var err error
						for attempt := 0; attempt < 10; attempt++ {
							out, err = exec.Command(agent, "run", "--key", "control", "--ttl", "1s", "--wait", "0s", "--endpoints",
								strings.Join(c.Addrs(), ","), "--username", "billing", "--key-prefix", "billing:", "--password",
								billingPassword1, "--", "true").CombinedOutput()
							if err == nil || strings.Contains(string(out), "WRONGPASS") || !strings.Contains(string(out), "masters unavailable") {
								break
							}
						}
						if err == nil || !strings.Contains(string(out), "WRONGPASS") {
							return fmt.Errorf("a client on the retired password: %v, want a refusal naming WRONGPASS:\n%s", err, out)
						}
						return nil
					},
					// Stopped before the test's destroy removes the user.
					func(*terraform.State) error { return stopAndCount(t, workers, perPhase) },
				),
			},
		},
	})

}

// stopAndCount stops the workers (each finishes its run) and fails when a run was refused
// its credentials, or when fewer runs succeeded than the phases needed. A run that failed
// otherwise (masters that missed the node timeout on a loaded machine) is logged: it is not
// what a rotation can cause.
func stopAndCount(t *testing.T, workers []*rotationWorker, perPhase int) error {
	total, failed, refused := 0, 0, 0
	for _, w := range workers {
		_ = os.WriteFile(w.stopFile, nil, 0o644)
	}
	for i, w := range workers {
		_ = w.cmd.Wait()
		for _, code := range w.runs() {
			total++
			if code != "0" {
				failed++
			}
			if code == "77" {
				refused++
			}
		}
		errs, _ := os.ReadFile(w.errs)
		if bytes.Contains(errs, []byte("WRONGPASS")) || bytes.Contains(errs, []byte("NOAUTH")) {
			refused++
		}
		if failed > 0 && len(errs) > 0 {
			t.Logf("worker %d stderr:\n%s", i, errs)
		}
	}
	t.Logf("rotation under load: %d processes, %d lockagent runs (acquire, renew, release), %d failed", len(workers), total, failed)
	if refused != 0 || total-failed < len(workers)*3*perPhase {
		return fmt.Errorf("%d of %d runs failed, %d refused their credentials (want none refused, at least %d succeeded)", failed, total, refused, len(workers)*3*perPhase)
	}
	return nil
}
