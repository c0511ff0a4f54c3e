// An LD_PRELOAD shim that skews a process's wall clock, so tests can run a real
// redis-server whose clock is ahead, behind, fast or slow. Only CLOCK_REALTIME (and
// gettimeofday/time, which read it) changes: that is the clock Redis keeps expirations and
// TIME in. The monotonic clock is left alone, as on a real host whose NTP misbehaves.
//   REDISTEST_CLOCK_OFFSET_NS  nanoseconds added to the wall clock
//   REDISTEST_CLOCK_RATE       wall-clock seconds that pass per real second (1.0 = correct)
//   REDISTEST_CLOCK_STEP_FILE  a file whose first 8 bytes (a native-endian int64) are
//                              nanoseconds added too, read on every call: rewriting them in
//                              place steps the running process's clock
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static long long offset_ns, base_ns;
static double rate = 1.0;
static volatile const long long *step_ns;

static void skew_init(void) {
	struct timespec ts;
	const char *v;
	if (real_clock_gettime) return;
	real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
	if ((v = getenv("REDISTEST_CLOCK_OFFSET_NS"))) offset_ns = atoll(v);
	if ((v = getenv("REDISTEST_CLOCK_RATE"))) rate = atof(v);
	if ((v = getenv("REDISTEST_CLOCK_STEP_FILE"))) {
		int fd = open(v, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			void *p = mmap(NULL, sizeof(long long), PROT_READ, MAP_SHARED, fd, 0);
			close(fd);
			if (p != MAP_FAILED) step_ns = p;
		}
	}
	real_clock_gettime(CLOCK_REALTIME, &ts);
	base_ns = ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((constructor)) static void skew_ctor(void) { skew_init(); }

int clock_gettime(clockid_t id, struct timespec *ts) {
	long long now;
	int rc;
	skew_init();
	rc = real_clock_gettime(id, ts);
	if (rc != 0 || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE)) return rc;
	now = ts->tv_sec * 1000000000LL + ts->tv_nsec;
	now = base_ns + (long long)((double)(now - base_ns) * rate) + offset_ns;
	if (step_ns) now += *step_ns;
	ts->tv_sec = now / 1000000000LL;
	ts->tv_nsec = now % 1000000000LL;
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	struct timespec ts;
	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *out) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (out) *out = ts.tv_sec;
	return ts.tv_sec;
}
