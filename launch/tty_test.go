package launch

import (
	"context"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPty opens a new pseudo-terminal and returns its master, which the
// test holds and never reads, and the path of its slave, which a job file
// may name as its output like any file the user can write.
func openPty(t *testing.T) (master *os.File, slave string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock, n int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	return m, "/dev/pts/" + strconv.Itoa(int(n))
}

// An ssh job's stderr is copied into its file by the shepherd (it takes
// the protocol's markers out). A file whose writes block, such as a
// terminal nobody reads (the job's user holds its other side), must not
// stop the shepherd: the walltime still ends the job and the Result is
// written.
func TestSSH_BlockingStderrDoesNotStopTheShepherd(t *testing.T) {
	_, slave := openPty(t)
	spec := newSpec(t, "sh", "-c", "while :; do echo stderr-of-the-job-stderr-of-the-job-stderr-of-the-job >&2; done")
	spec.SSH = fakeSSH(t, "")
	spec.Hosts = []string{"remote1"}
	spec.Stderr = slave
	spec.Walltime = 300 * time.Millisecond
	h, err := testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	// The connection is abandoned 10 s after SIGKILL (abandonAfter), and
	// the filter is waited for twice drainWait.
	ctx, cancel := context.WithTimeout(context.Background(), abandonAfter+2*drainWait+waitBound)
	defer cancel()
	res, err := h.Wait(ctx)
	if err != nil {
		h.Cancel()
		t.Fatalf("no result: %v", err)
	}
	if res.Reason != "walltime exceeded" {
		t.Fatalf("got %+v", res)
	}
}
