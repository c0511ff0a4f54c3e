package redlock

// ReleaseScript returns the release script's source (durable: the durable release, whose
// hand-offs are all logged), for tests that run a release the way a go-redis client
// replays it.
func ReleaseScript(durable bool) string {
	if durable {
		return durableReleaseScript.Source
	}
	return releaseScript.Source
}
