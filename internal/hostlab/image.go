//go:build linux

package hostlab

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The image every host boots from (the lower layer of each host's overlay root).
const (
	imageSuite = "bookworm"
	// imageVersion changes whenever the build steps change in a way the hashed inputs
	// below do not show.
	imageVersion = "3"
	// DefaultCacheDir holds one directory per image hash; $REDLOCK_HOSTLAB_CACHE overrides it.
	DefaultCacheDir = "/var/cache/redlock-kit/hostlab"
)

// imagePackages go in with debootstrap. python3-cffi-backend is listed because
// debootstrap does not resolve the virtual package python3-cryptography needs.
var imagePackages = []string{
	"systemd", "systemd-sysv", "dbus", "python3-cffi-backend", "cloud-init",
	"redis-server", "redis-tools", "iproute2", "procps",
	// The hosts module runs Debian's exporters by default (docs/monitoring.md).
	"prometheus-redis-exporter", "prometheus-node-exporter",
}

// backportPackages come from <suite>-backports, installed with apt-get in a chroot.
var backportPackages = []string{"valkey-server", "valkey-tools"}

// cloudCfg is the image's cloud-init configuration: NoCloud only, no network
// configuration (the harness sets the address before boot) and a module list trimmed
// to what works without a network or packages.
const cloudCfg = `# hostlab: NoCloud seed in /var/lib/cloud/seed/nocloud, nothing else.
datasource_list: [ NoCloud, None ]
network: {config: disabled}
users: []
disable_root: false
ssh_pwauth: false
cloud_init_modules:
 - migrator
 - seed_random
 - bootcmd
 - write-files
 - set_hostname
 - update_hostname
cloud_config_modules:
 - runcmd
cloud_final_modules:
 - write-files-deferred
 - scripts-per-once
 - scripts-per-boot
 - scripts-per-instance
 - scripts-user
 - final-message
`

// customizeScript runs in a chroot of the fresh debootstrap tree; $1 is the mirror.
const customizeScript = `set -eu
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
echo "deb $1 ` + imageSuite + `-backports main" > /etc/apt/sources.list.d/backports.list
apt-get update -qq
apt-get install -y -qq --no-install-recommends -t ` + imageSuite + `-backports $2 >/dev/null
# The user-data enables and starts the servers; the image must not.
systemctl disable redis-server.service valkey-server.service
# No consoles to log in on; keeps the boot quiet.
systemctl mask console-getty.service getty@tty1.service serial-getty@.service
# Every host gets its own machine id at first boot (committed to its overlay).
rm -f /var/lib/dbus/machine-id
: > /etc/machine-id
ln -s /etc/machine-id /var/lib/dbus/machine-id
apt-get clean
rm -rf /var/lib/apt/lists/*
`

// imageHash covers everything that shapes the image.
func imageHash() string {
	h := sha256.New()
	fmt.Fprintf(h, "v=%s\nsuite=%s\npkgs=%s\nbackports=%s\n", imageVersion, imageSuite,
		strings.Join(imagePackages, ","), strings.Join(backportPackages, ","))
	fmt.Fprintf(h, "script=%s\ncloudcfg=%s\n", customizeScript, cloudCfg)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func cacheDir() string {
	if d := os.Getenv("REDLOCK_HOSTLAB_CACHE"); d != "" {
		return d
	}
	return DefaultCacheDir
}

// ensureImage returns the rootfs of the cached image, building it first when missing.
// A lock file serializes builders; a build goes to a temp dir renamed into place.
func ensureImage(ctx context.Context, logf func(string, ...any)) (string, error) {
	root := cacheDir()
	hash := imageHash()
	final := filepath.Join(root, hash)
	rootfs := filepath.Join(final, "rootfs")
	if imageComplete(final) {
		return rootfs, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(root, hash+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	for {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return "", fmt.Errorf("lock image cache: %w", err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for another process building the image: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	if imageComplete(final) {
		return rootfs, nil
	}
	// Leftovers of a crashed build of this hash (we hold its lock).
	old, _ := filepath.Glob(filepath.Join(root, ".build-"+hash+"-*"))
	for _, d := range old {
		if err := removeTree(d); err != nil {
			return "", fmt.Errorf("remove stale image build %s: %w", d, err)
		}
	}
	if err := removeTree(final); err != nil { // incomplete
		return "", err
	}
	for _, tool := range []string{"debootstrap", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", unavailable("%s is not installed (needed once to build the host image): run scripts/deps.sh", tool)
		}
	}
	mirror, err := aptMirror()
	if err != nil {
		return "", unavailable("no Debian mirror for the host image: %v", err)
	}
	build := filepath.Join(root, fmt.Sprintf(".build-%s-%d", hash, os.Getpid()))
	if err := os.MkdirAll(build, 0o755); err != nil {
		return "", err
	}
	start := time.Now()
	logf("hostlab: building the host image %s (debootstrap %s from %s; about a minute, once)", hash, imageSuite, mirror)
	if err := buildImage(ctx, build, mirror); err != nil {
		_ = removeTree(build)
		return "", err
	}
	if err := os.WriteFile(filepath.Join(build, "complete"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		_ = removeTree(build)
		return "", err
	}
	if err := os.Rename(build, final); err != nil {
		_ = removeTree(build)
		return "", err
	}
	logf("hostlab: host image built in %v: %s", time.Since(start).Round(time.Second), rootfs)
	return rootfs, nil
}

func imageComplete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "complete"))
	return err == nil
}

func buildImage(ctx context.Context, build, mirror string) error {
	rootfs := filepath.Join(build, "rootfs")
	logPath := filepath.Join(build, "build.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	run := func(stdin string, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C")
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Run(); err != nil {
			// debootstrap may leave /proc etc. mounted in the target.
			_ = unmountUnder(rootfs)
			return fmt.Errorf("%s: %v; last lines of %s:\n%s", name, err, logPath, tailFile(logPath, 15))
		}
		return nil
	}
	if err := run("", "debootstrap", "--variant=minbase", "--include="+strings.Join(imagePackages, ","),
		imageSuite, rootfs, mirror); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(rootfs, "etc/cloud/cloud.cfg.d/90-hostlab.cfg"), []byte(cloudCfg), 0o644); err != nil {
		return err
	}
	if err := run("", "chroot", rootfs, "/bin/sh", "-c", customizeScript, "customize", mirror,
		strings.Join(backportPackages, " ")); err != nil {
		return err
	}
	return unmountUnder(rootfs)
}

// aptMirror finds the Debian mirror this machine's apt uses for the image suite:
// $REDLOCK_HOSTLAB_MIRROR, else deb822 .sources entries, else one-line .list entries.
func aptMirror() (string, error) {
	if m := os.Getenv("REDLOCK_HOSTLAB_MIRROR"); m != "" {
		return m, nil
	}
	sources, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, f := range sources {
		if m := mirrorFromDeb822(f); m != "" {
			return m, nil
		}
	}
	lists, _ := filepath.Glob("/etc/apt/sources.list.d/*.list")
	for _, f := range append([]string{"/etc/apt/sources.list"}, lists...) {
		if m := mirrorFromList(f); m != "" {
			return m, nil
		}
	}
	return "", fmt.Errorf("no apt source for suite %s in /etc/apt/sources.list{,.d/*}; set REDLOCK_HOSTLAB_MIRROR", imageSuite)
}

func mirrorFromDeb822(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, stanza := range strings.Split(string(data), "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, " ") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
		if strings.EqualFold(fields["enabled"], "no") || !hasWord(fields["types"], "deb") ||
			!hasWord(fields["suites"], imageSuite) || !hasWord(fields["components"], "main") {
			continue
		}
		if uris := strings.Fields(fields["uris"]); len(uris) > 0 {
			return uris[0]
		}
	}
	return ""
}

func mirrorFromList(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[0] != "deb" {
			continue
		}
		fields = fields[1:]
		if strings.HasPrefix(fields[0], "[") { // [options]
			for len(fields) > 0 && !strings.HasSuffix(fields[0], "]") {
				fields = fields[1:]
			}
			if len(fields) > 0 {
				fields = fields[1:]
			}
		}
		if len(fields) >= 3 && fields[1] == imageSuite && hasWord(strings.Join(fields[2:], " "), "main") {
			return fields[0]
		}
	}
	return ""
}

func hasWord(list, word string) bool {
	for _, w := range strings.Fields(list) {
		if w == word {
			return true
		}
	}
	return false
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
