// cpu_unix.go: the process's CPU time (user + system) from getrusage, which the
// bench reports per event: less disturbed than events/s by whatever else the
// machine and the server are doing.

//go:build unix

package bench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used so far (0 when unknown).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
