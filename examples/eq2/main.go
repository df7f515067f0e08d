// Command eq2 is the Warwick MS paper's synthetic test task (Perry et al.
// 1999, Eq. 2) as a real program: on i hosts it runs for
//
//	t(i) = C_cpu/i + C_com·i seconds
//
// of wall time: a computation of C_cpu seconds split evenly over i worker
// threads, each keeping one CPU busy for C_cpu/i seconds, then a
// "communication" phase of C_com·i seconds in which it waits. i is
// MSCHED_NHOSTS (set by msched's run daemon), or 1. The run time is fixed
// by the formula, not by the speed of the CPU, so the eq2 model file
// (examples/models/eq2.yaml) predicts it exactly on idle speed-1 hosts.
//
// Usage: eq2 [-cpu C_cpu] [-com C_com]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

func main() {
	cpu := flag.Float64("cpu", 8, "C_cpu: seconds of computation on one host")
	com := flag.Float64("com", 0.25, "C_com: seconds of communication per host")
	flag.Parse()
	if *cpu < 0 || *com < 0 {
		fmt.Fprintln(os.Stderr, "eq2: -cpu and -com must be ≥ 0")
		os.Exit(2)
	}
	n := 1
	if s := os.Getenv("MSCHED_NHOSTS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			fmt.Fprintf(os.Stderr, "eq2: MSCHED_NHOSTS=%q is not a host count\n", s)
			os.Exit(2)
		}
		n = v
	}
	start := time.Now()
	compute := seconds(*cpu / float64(n))
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // one thread per host, as one process per node would be
			spin(compute)
		}()
	}
	wg.Wait()
	time.Sleep(seconds(*com * float64(n)))
	fmt.Printf("eq2: %d hosts, C_cpu=%g C_com=%g: predicted %.2fs, ran %.2fs\n",
		n, *cpu, *com, *cpu/float64(n)+*com*float64(n), time.Since(start).Seconds())
}

// spin keeps the calling thread's CPU busy for d.
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := 1.0
	for time.Now().Before(end) {
		for range 1000 {
			x = x*1.000001 + 1e-9
		}
	}
	if x < 0 { // keeps the loop from being optimised away
		fmt.Println(x)
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
