package daemons

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/launch"
	"msched/spool"
)

// TestMain lets the test binary play the shepherd and the jobs when
// re-executed with a marker argument, as launch's own tests do, so the run
// daemon is tested through the real fork/exec path without building msched
// and without a shell.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case shepherdArg:
			os.Exit(launch.ShepherdMain())
		case jobArg:
			os.Exit(testJob(os.Args[2:]))
		}
	}
	// The race detector makes every instrumented process sleep 1 s at exit;
	// for a shepherd and its job that is 2 s on every job.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

const (
	shepherdArg = "daemons-test-shepherd"
	jobArg      = "daemons-test-job"
	// waitBound bounds every wait in these tests.
	waitBound = 20 * time.Second
	// progressBound bounds a wait whose point is that something happens
	// well before a slow path would make it happen (a periodic rescan or a
	// probe interval of a minute or more, which such a test sets so):
	// generous for a loaded machine, and well short of the slow path.
	progressBound = 30 * time.Second
)

// testJob is a job: "env" prints the MSCHED_* variables and the host file,
// "exit N" exits with N, "signal" kills itself with SIGKILL, "gate PATH"
// waits until PATH exists, "sleep" sleeps for a minute. Each first prints a
// line to stdout and to stderr.
func testJob(args []string) int {
	fmt.Println("hello from", strings.Join(args, " "))
	fmt.Fprintln(os.Stderr, "stderr of", strings.Join(args, " "))
	switch args[0] {
	case "env":
		for _, k := range []string{"MSCHED_JID", "MSCHED_HOSTS", "MSCHED_NHOSTS"} {
			fmt.Printf("%s=%s\n", k, os.Getenv(k))
		}
		b, err := os.ReadFile(os.Getenv("MSCHED_HOSTFILE"))
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Printf("hostfile:\n%s", b)
	case "exit":
		n, _ := strconv.Atoi(args[1])
		return n
	case "signal":
		syscall.Kill(os.Getpid(), syscall.SIGKILL) // one the Go runtime cannot catch
		time.Sleep(time.Minute)
	case "gate":
		for {
			if _, err := os.Stat(args[1]); err == nil {
				return 0
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "sleep":
		time.Sleep(time.Minute)
	}
	return 0
}

func testLauncher(t testing.TB) launch.Local {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return launch.Local{Exe: exe, Args: []string{shepherdArg}}
}

// jobArgv is the argv of a test job.
func jobArgv(t testing.TB, args ...string) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{exe, jobArg}, args...)
}

func newTestSpool(t testing.TB) *spool.Spool {
	t.Helper()
	sp, err := spool.Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// putJob writes j into state st as that state's owner would find it
// (history ending in st), with a fresh JID, and returns the JID.
func putJob(t testing.TB, sp *spool.Spool, st spool.State, j *spool.Job) string {
	t.Helper()
	var err error
	if j.JID == "" {
		if j.JID, err = sp.NextJID(); err != nil {
			t.Fatal(err)
		}
	}
	if j.User == "" {
		j.User = "alice"
	}
	if j.SubmittedAt.IsZero() {
		j.SubmittedAt = time.Now().UTC().Add(-time.Second)
	}
	if len(j.History) == 0 {
		j.History = []spool.Event{{State: spool.Submitted, At: j.SubmittedAt}, {State: spool.Queued, At: j.SubmittedAt}}
		if st != spool.Queued {
			j.History = append(j.History, spool.Event{State: st, At: j.SubmittedAt})
		}
	}
	b, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := spool.WriteAtomic(sp.Dir(st), j.JID, b); err != nil {
		t.Fatal(err)
	}
	return j.JID
}

// runnable places a job with argv on hosts h0 and h1 in runnable/.
func runnable(t testing.TB, sp *spool.Spool, argv []string, edit func(*spool.Job)) string {
	t.Helper()
	uid := os.Geteuid() // the test's own user, whatever putJob names
	j := &spool.Job{Name: "test", Command: argv, UID: &uid,
		Schedule: &spool.Schedule{Hosts: []string{"h0", "h1"}, PredictedSeconds: 1, Policy: "test"}}
	if edit != nil {
		edit(j)
	}
	return putJob(t, sp, spool.Runnable, j)
}

// startDaemon runs d until the test ends or the returned stop is called;
// stop waits for Run to return and fails the test on an error.
func startDaemon(t *testing.T, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("daemon: %v", err)
			}
		case <-time.After(waitBound):
			t.Errorf("daemon did not stop within %v", waitBound)
		}
	}
	t.Cleanup(stop)
	return stop
}

// testEnv logs to the test's log, so a failure shows what the daemons did.
func testEnv(t testing.TB, sp *spool.Spool) Env {
	return Env{Spool: sp, Log: slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))}
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// eventually polls cond until it holds or waitBound passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, waitBound, what, cond)
}

// eventuallyWithin polls cond until it holds, failing the test once bound
// has passed, and returns how long it waited.
func eventuallyWithin(t testing.TB, bound time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > bound {
			t.Fatalf("timed out waiting until %s (%v)", what, bound)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// inState waits until job jid is in st and returns it as read from there.
func inState(t testing.TB, sp *spool.Spool, jid string, st spool.State) *spool.Job {
	t.Helper()
	var j *spool.Job
	eventually(t, jid+" in "+string(st), func() bool {
		var err error
		j, err = sp.Read(st, jid)
		if err != nil && !errors.Is(err, spool.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	})
	return j
}

func jobsIn(t testing.TB, sp *spool.Spool, st spool.State) int {
	t.Helper()
	es, err := sp.List(st)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func readText(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// historyCount counts the history entries of j in state st.
func historyCount(j *spool.Job, st spool.State) int {
	n := 0
	for _, e := range j.History {
		if e.State == st {
			n++
		}
	}
	return n
}

// procGone reports whether pid no longer runs; a zombie counts as gone.
func procGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i+2 < len(b) && b[i+2] == 'Z'
}
