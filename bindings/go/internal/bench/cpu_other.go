// cpu_other.go: no CPU time where getrusage is not (the bench then reports 0).

//go:build !unix

package bench

import "time"

func cpuTime() time.Duration { return 0 }
