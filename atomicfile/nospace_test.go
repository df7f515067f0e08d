package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestRetryNoSpace(t *testing.T) {
	noSpace := fmt.Errorf("atomicfile: %w", &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC})
	quota := &os.PathError{Op: "write", Path: "x", Err: syscall.EDQUOT}
	eio := &os.PathError{Op: "write", Path: "x", Err: syscall.EIO}
	for _, tc := range []struct {
		name  string
		errs  []error // write's results, in order; then nil
		tries int
		want  error
	}{
		{"succeeds at once", nil, 1, nil},
		{"no space, then space", []error{noSpace, noSpace, quota}, 4, nil},
		{"another error is not retried", []error{noSpace, eio, noSpace}, 2, eio},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tries, waits := 0, 0
			err := RetryNoSpace(context.Background(), func() error {
				tries++
				if tries <= len(tc.errs) {
					return tc.errs[tries-1]
				}
				return nil
			}, func(err error, round int) {
				if !NoSpace(err) || round != waits {
					t.Errorf("waiting(%v, %d) after %d waits", err, round, waits)
				}
				waits++
			})
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("err %v, want %v", err, tc.want)
			}
			if tries != tc.tries {
				t.Errorf("%d tries, want %d", tries, tc.tries)
			}
		})
	}
	t.Run("ctx ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		tries := 0
		err := RetryNoSpace(ctx, func() error {
			tries++
			return noSpace
		}, func(error, int) {
			if tries == 3 {
				cancel()
			}
		})
		if !errors.Is(err, syscall.ENOSPC) || tries != 3 {
			t.Errorf("err %v after %d tries; want the write's ENOSPC after 3", err, tries)
		}
	})
}

func TestNoSpaceWait_Bounded(t *testing.T) {
	prev := time.Duration(0)
	for round := 0; round < 100; round++ {
		d := NoSpaceWait(round)
		if d < prev || d < NoSpaceMinWait || d > NoSpaceMaxWait {
			t.Fatalf("round %d: wait %v after %v", round, d, prev)
		}
		prev = d
	}
	if prev != NoSpaceMaxWait {
		t.Errorf("the wait ends at %v, want %v", prev, NoSpaceMaxWait)
	}
}
