package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"msched/internal/diskfull"
)

// The shepherd's Result is written once the file system has space again,
// however long it was full, and the job is never taken for lost meanwhile
// (issue 13, item 2: a shepherd that could not write its result exited 1,
// and the run daemon ran the job again). Here on a real full tmpfs; the
// injected test below needs no privilege.
func TestLocal_ResultWaitsForSpace(t *testing.T) {
	fs := diskfull.Mount(t, 1<<20)
	spec := newSpec(t, "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done`, "job")
	gate := filepath.Join(spec.Dir, "gate") // not on the tmpfs, nor the output
	spec.Argv = append(spec.Argv, gate)
	spec.ResultPath, spec.PidPath = filepath.Join(fs, "j1.result"), filepath.Join(fs, "j1.pid")
	h, err := testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := <-h.(StartNotifier).Started()
	if !ok || rec.Pgid == 0 {
		t.Fatal("the job did not start")
	}
	free := diskfull.Fill(t, fs)
	// Each try of the Result's write creates its temporary (an empty file
	// still fits on the full tmpfs; its write does not).
	tries := countCreates(t, fs, ".j1.result.")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the job ended", func() bool { return gone(rec.Pgid) })
	// Full after the job's end, until the shepherd has tried to write the
	// Result and tried again: it must still be there, waiting to write,
	// not gone with the job taken for lost. (Without waiting for the tries
	// a slow shepherd might not have tried yet, and this proved nothing.)
	eventually(t, "the Result's write tried twice", func() bool { return tries() >= 2 || gone(h.Pid()) })
	if n := tries(); n < 2 {
		t.Fatalf("the shepherd ended, with the disk full, after %d tries of its Result's write", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	res, err := h.Wait(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("while the disk was full the wait ended with %+v, %v", res, err)
	}
	if _, err := os.Stat(spec.ResultPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a result on a full file system? %v", err)
	}
	free()
	// The next try comes within atomicfile.NoSpaceMaxWait (1 s); the bound
	// is generous for a loaded machine. A shepherd that did not try again
	// by itself would never write it.
	begin := time.Now()
	res = wait(t, h)
	if !res.OK() {
		t.Errorf("result %+v, want the job's exit status 0", res)
	}
	if d := time.Since(begin); d > waitBound {
		t.Errorf("result written %v after space came back", d)
	}
}

// countCreates watches dir (inotify) from now until the test ends, and
// returns a function that counts the files created in it whose names begin
// with prefix.
func countCreates(t *testing.T, dir, prefix string) func() int {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "inotify") // non-blocking: Close ends a Read
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE); err != nil {
		f.Close()
		t.Fatal(err)
	}
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			k, err := f.Read(buf)
			if err != nil {
				return
			}
			for b := buf[:k]; len(b) >= syscall.SizeofInotifyEvent; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&b[0]))
				end := syscall.SizeofInotifyEvent + int(ev.Len)
				name := strings.TrimRight(string(b[syscall.SizeofInotifyEvent:end]), "\x00")
				if strings.HasPrefix(name, prefix) {
					n.Add(1)
				}
				b = b[end:]
			}
		}
	}()
	t.Cleanup(func() { f.Close(); <-done })
	return func() int { return int(n.Load()) }
}

// The same without a full disk: the Result's write fails with ENOSPC a few
// times (an injected failure), then succeeds; the shepherd writes the
// Result and reports success. A failure that is not for space is reported
// as ErrUnrecorded once the job ran (the run daemon must not run it again),
// but not for a job that never started.
func TestShepherd_ResultWriteRetriedAfterNoSpace(t *testing.T) {
	real := resultWriter
	t.Cleanup(func() { resultWriter = real })
	for _, tc := range []struct {
		name       string
		argv       []string
		fail       error
		failures   int32
		unrecorded bool // Shepherd's error wraps ErrUnrecorded
		written    bool
	}{
		{"no space, then space", []string{"true"}, syscall.ENOSPC, 3, false, true},
		{"over quota, then space", []string{"true"}, syscall.EDQUOT, 2, false, true},
		{"I/O error", []string{"true"}, syscall.EIO, 1, true, false},
		{"I/O error, never started", []string{"/no/such/program"}, syscall.EIO, 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tries atomic.Int32
			resultWriter = func(spec Spec, data []byte) error {
				if tries.Add(1) <= tc.failures {
					return fmt.Errorf("launch: injected: %w", &os.PathError{Op: "write", Path: spec.ResultPath, Err: tc.fail})
				}
				return real(spec, data)
			}
			spec := newSpec(t, tc.argv...)
			ctx, cancel := context.WithTimeout(context.Background(), waitBound)
			defer cancel()
			err := Shepherd(ctx, spec)
			if tc.written != (err == nil) || errors.Is(err, ErrUnrecorded) != tc.unrecorded {
				t.Fatalf("Shepherd: %v; want written %v, unrecorded %v", err, tc.written, tc.unrecorded)
			}
			if !tc.written {
				return
			}
			if n := tries.Load(); n != tc.failures+1 {
				t.Errorf("%d tries, want %d", n, tc.failures+1)
			}
			res, ok, err := readResult(spec.ResultPath)
			if !ok || err != nil || !res.OK() {
				t.Errorf("result %+v, %v, %v", res, ok, err)
			}
		})
	}
}

// A shepherd whose job ran but whose Result cannot be written exits with
// ExitUnrecorded, and Local's Handle reports the job ended, not lost.
func TestLocal_UnrecordedIsNotLost(t *testing.T) {
	spec := newSpec(t, "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done`, "job")
	gate := filepath.Join(spec.Dir, "gate")
	spec.Argv = append(spec.Argv, gate)
	sub := filepath.Join(spec.Dir, "results")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	spec.ResultPath = filepath.Join(sub, "j1.result")
	h, err := testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	// Once the job runs, the result's directory goes: its write fails
	// (ENOENT), for a reason no wait for space can cure.
	if rec, ok := <-h.(StartNotifier).Started(); !ok || rec.Pgid == 0 {
		t.Fatal("the job did not start")
	}
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v; want a Result saying the job ended unrecorded", err)
	}
	if res.StartError || res.OK() || !strings.Contains(res.Reason, "could not record") {
		t.Errorf("result %+v", res)
	}
}
