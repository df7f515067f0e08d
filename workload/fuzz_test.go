package workload

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzSWFReader reads arbitrary bytes as an SWF trace. Whatever the input,
// the reader must not panic, must end (a line is bounded, every error is
// sticky), and every job it returns must survive a write and a read
// unchanged: what msched reads from a trace is exactly what it would
// write of it.
func FuzzSWFReader(f *testing.F) {
	f.Add([]byte("; Version: 2.2\n; MaxProcs: 128\n1 0 10 3600 16 -1 -1 16 7200 -1 1 3 -1 -1 1 -1 -1 -1\n"))
	f.Add([]byte("1 0 10 3600 16 -1 -1 16 7200 -1 1 3 -1 -1 1 -1 -1 -1\n\n; comment\n2 5.5 0 1 1 -1 -1 1 1 -1 1 1 1 1 1 1 -1 -1\r\n"))
	f.Add([]byte("1 0 10 3600 16.0 -1 -1 16 7200 -1 1 3 -1 -1 1 4294967297 -1 -1\n"))
	f.Add([]byte("1 0 10 NaN 16 -1 -1 16 7200 -1 1 3 -1 -1 1 -1 -1 -1\n"))
	f.Add([]byte("1 0 10 1e400 16 -1 -1 16 7200 -1 1 3 -1 -1 1 -1 -1 -1 19\n"))
	f.Add([]byte("; MaxProcs: x\n"))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	f.Add([]byte("1 2 3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		defer r.Close()
		var jobs []Job
		for i := 0; ; i++ {
			j, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				// Sticky: the same error again.
				if _, err2 := r.Next(); err2 == nil || err2.Error() != err.Error() {
					t.Fatalf("error not sticky: %v, then %v", err, err2)
				}
				break
			}
			if i > len(data) {
				t.Fatalf("more jobs (%d) than bytes of input", i)
			}
			jobs = append(jobs, j)
		}
		var b bytes.Buffer
		w := NewWriter(&b, r.Header())
		for _, j := range jobs {
			if err := w.Write(j); err != nil {
				t.Fatalf("write %+v: %v", j, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		_, back, err := ReadAll(strings.NewReader(b.String()))
		if err != nil {
			t.Fatalf("reading back what was written: %v\n%s", err, b.String())
		}
		if len(back) != len(jobs) {
			t.Fatalf("read back %d jobs, wrote %d", len(back), len(jobs))
		}
		for i := range jobs {
			if back[i] != jobs[i] {
				t.Fatalf("job %d: read back %+v, wrote %+v", i, back[i], jobs[i])
			}
		}
	})
}
