package apitest

import (
	"syscall"
	"testing"
)

// ReportCPU starts counting the process's CPU time (user and system, of
// every goroutine: a stream subscriber's too); the function it returns
// reports it per iteration as cpu-ns/op. Unlike ns/op, it leaves out the
// time other processes of a shared machine take from this one.
func ReportCPU(b *testing.B) func() {
	start := cpuTime(b)
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// cpuTime is the CPU time this process has used, in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
