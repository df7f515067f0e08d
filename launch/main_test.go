package launch

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestMain lets the test binary play the shepherd (and a run daemon that can
// be killed) when re-executed with a marker argument, so the tests exercise
// the real fork/exec path without building msched.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case shepherdArg:
			if d, err := time.ParseDuration(os.Getenv(lingerEnv)); err == nil {
				sshLinger = d
			}
			os.Exit(ShepherdMain())
		case daemonArg:
			os.Exit(fakeDaemon())
		}
	}
	// The race detector makes every instrumented process sleep 1 s at exit
	// (atexit_sleep_ms); for a shepherd that is 1 s on every job.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	code := m.Run()
	stopSSHD() // if a test started it
	os.Exit(code)
}

const (
	shepherdArg = "launch-test-shepherd"
	daemonArg   = "launch-test-daemon"
	// lingerEnv sets sshLinger in a test shepherd.
	lingerEnv = "LAUNCH_TEST_SSH_LINGER"
)

func testLocal(t testing.TB) Local {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Local{Exe: exe, Args: []string{shepherdArg}}
}

// fakeDaemon starts the spec on stdin through a shepherd, prints the
// shepherd's pid, and then waits to be killed, like a run daemon that dies
// with a job in flight.
func fakeDaemon() int {
	spec, err := ReadSpec(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	exe, _ := os.Executable()
	h, err := Local{Exe: exe, Args: []string{shepherdArg}}.Start(context.Background(), spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := bufio.NewWriter(os.Stdout)
	w.WriteString(strconv.Itoa(h.Pid()) + "\n")
	w.Flush()
	select {}
}
