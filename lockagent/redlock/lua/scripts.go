package lua

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

//go:embed *.lua
var files embed.FS

// Script is one of the library's Lua scripts.
type Script struct {
	// Name is stable across versions (lower case letters, digits and '_').
	Name string
	// Source is the script as EVAL and SCRIPT LOAD send it.
	Source string
	// SHA1 is the hex SHA-1 of Source (EVALSHA).
	SHA1 string
	// Function is its function in the library: "redlock_<Name>_<library version>". Every
	// function carries the version of the whole library, not its own script's SHA-1: a
	// master whose library is of another version has none of a client's functions, so a
	// lock user (FCALL only) is refused before its acquisition writes anything, instead of
	// running the scripts two versions share (acquire) and failing on one that changed
	// (release) with the lock taken.
	Function string
	// Flags are the function's flags (redis.register_function).
	Flags []string
	// prelude is the helpers Source carries after its lead (queue.lua), "" when none; body
	// is the rest of Source, its lead first: the library defines a prelude once, for every
	// function that has it (see generateLibrary).
	prelude, body string
}

// Constants of the scripts, put into their code where it names them (GRANT_CHANNEL, ...).
const (
	// FenceSuffix names the fencing register of a lock: key+FenceSuffix, a plain integer
	// string with no TTL (redlock.FenceSuffix; the fence seeding of a new master reads it).
	FenceSuffix = ":fence"
	// GrantChannelInfix names the channel on which a release tells a Client that it handed
	// the lock to one of its waiters: key+GrantChannelInfix+<the Client's id>.
	GrantChannelInfix = ":granted:"
	// HandOffPeriod and OpenWindow leave room for clients that only poll: a release in the
	// first OpenWindow of every HandOffPeriod, by the master's clock, leaves the key free
	// until the window ends (see release.lua).
	HandOffPeriod = 100 * time.Millisecond
	OpenWindow    = 5 * time.Millisecond
	// ChainFences is how many fences a logged hand-off reserves: the register goes that far
	// minus one past the new holder's fence, so that up to as many hand-offs after it need
	// no log write for their fence (see release.lua).
	ChainFences = 100
	// QueueBytes bounds, in bytes, the wait queue's key (the first waiters) and each of its
	// pages for lines that go at the end (see queue.lua): about 11 waiters each. Every hand-off
	// and every attempt that queues copies the front at least once, and Redis hashes each
	// string a script makes, whole: a smaller front costs those scripts less, pages more often.
	QueueBytes = 1024
	// ForeignQueueCode starts the error reply of acquire_queued on a master whose queue
	// key, or a page of it, holds a value that is not a wait queue.
	ForeignQueueCode = "REDLOCKFOREIGNQUEUE"
)

// allowOOM is the function flag of a script that must run on a master that is out of
// memory: a release only deletes. Without it a function is refused as a whole under OOM
// (where EVAL would only refuse its SET), which is what an acquisition wants.
const allowOOM = "allow-oom"

// scripts are the library's scripts, in the order of its functions. Each file's code is
// put together with the constants above; versioned names their functions.
var scripts = versioned([]Script{
	newScript("acquire", code("acquire.lua")),
	withPrelude("acquire_queued", "", code("queue.lua"), code("acquire_queued.lua")),
	withPrelude("release", "local durable = false", code("queue.lua"), code("release.lua"), allowOOM),
	withPrelude("release_durable", "local durable = true", code("queue.lua"), code("release.lua"), allowOOM),
	newScript("extend", code("extend.lua")),
	newScript("fence", code("fence.lua")),
})

// The scripts.
var (
	Acquire        = scripts[0]
	AcquireQueued  = scripts[1]
	Release        = scripts[2]
	ReleaseDurable = scripts[3]
	Extend         = scripts[4]
	Fence          = scripts[5]
)

// All returns every script of the library, in the order of its functions.
func All() []Script { return append([]Script(nil), scripts...) }

// versioned returns scripts with their function names set: "redlock_<Name>_<version>",
// where version (versionOf) identifies the whole set.
func versioned(scripts []Script) []Script {
	version := versionOf(scripts)
	out := make([]Script, len(scripts))
	for i, s := range scripts {
		s.Function = "redlock_" + s.Name + "_" + version
		out[i] = s
	}
	return out
}

// versionOf is the library version of scripts: a SHA-1 prefix of what the library carries
// of each (name, flags, compacted code), so two kit versions with the same scripts have
// the same version, and a reworded comment changes nothing.
func versionOf(scripts []Script) string {
	h := sha1.New()
	for _, s := range scripts {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", s.Name, strings.Join(s.Flags, ","), Compact(s.Source))
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// code is the file's code: the file without its header comment lines, with the
// constants put in.
func code(file string) string {
	b, err := files.ReadFile(file)
	if err != nil {
		panic(fmt.Sprintf("lua: %s is not embedded: %v", file, err))
	}
	src := string(b)
	for strings.HasPrefix(src, "--") {
		_, src, _ = strings.Cut(src, "\n")
	}
	return constants.Replace(src)
}

var constants = strings.NewReplacer(
	"GRANT_CHANNEL", `"`+GrantChannelInfix+`"`,
	"HANDOFF_PERIOD", strconv.FormatInt(HandOffPeriod.Milliseconds(), 10),
	"OPEN_WINDOW", strconv.FormatInt(OpenWindow.Milliseconds(), 10),
	"CHAIN_FENCES", strconv.Itoa(ChainFences),
	"QUEUE_BYTES", strconv.Itoa(QueueBytes),
	"FOREIGN_QUEUE", `"`+ForeignQueueCode+`"`)

// newScript makes a script: name (lower case letters, digits and '_') is stable across
// versions; versioned names its function.
func newScript(name, src string, flags ...string) Script {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			panic(fmt.Sprintf("lua: script name %q: use lower case letters, digits and '_'", name))
		}
	}
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	return Script{Name: name, Source: src, SHA1: sha, Flags: flags}
}

// withPrelude makes a script whose Source is lead, then the helpers of prelude, then body
// (lead declares what the helpers do not use). EVAL sends all of it at every call; the
// library defines the prelude once, at its top level, and the function is lead and body
// (generateLibrary).
func withPrelude(name, lead, prelude, body string, flags ...string) Script {
	s := newScript(name, lead+prelude+body, flags...)
	s.prelude, s.body = prelude, lead+"\n"+body
	return s
}

// libraryBody is the script's code in the library: its body after a prelude the library
// defines once, else its whole Source.
func (s Script) libraryBody() string {
	if s.prelude == "" {
		return s.Source
	}
	return s.body
}
