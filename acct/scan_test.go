package acct

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ScanBack gives every whole line, last first, whatever the chunk
// boundaries, skips a last line without its newline, and stops when asked.
func TestScanBack_LinesAcrossChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), JSONL)
	writeLog := func(data []byte) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	var data []byte
	for i := 0; i < 3000; i++ {
		// Lines of varying length, some longer than a chunk.
		n := (i * 37) % 200
		if i%500 == 7 {
			n += scanChunk + 100
		}
		l := fmt.Sprintf(`{"jid":"J%06d","name":"%s"}`, i, strings.Repeat("x", n))
		want = append(want, l)
		data = append(append(data, l...), '\n')
	}
	for _, tail := range []string{"", `{"jid":"J999999","na`, strings.Repeat("y", scanChunk+10)} {
		writeLog(append(bytes.Clone(data), tail...))
		var got []string
		complete, err := ScanBack(path, 0, func(line []byte) bool { got = append(got, string(line)); return true })
		if err != nil || !complete {
			t.Fatalf("tail %d bytes: complete %v, err %v", len(tail), complete, err)
		}
		if len(got) != len(want) {
			t.Fatalf("tail %d bytes: %d lines, want %d", len(tail), len(got), len(want))
		}
		for i := range got {
			if got[i] != want[len(want)-1-i] {
				t.Fatalf("tail %d bytes: line %d from the end differs", len(tail), i)
			}
		}
	}
	writeLog(data)
	n := 0
	complete, _ := ScanBack(path, 0, func([]byte) bool { n++; return n < 5 })
	if n != 5 || !complete {
		t.Errorf("stopped after %d lines, complete %v", n, complete)
	}
	n = 0
	complete, _ = ScanBack(path, scanChunk, func([]byte) bool { n++; return true })
	if complete || n == 0 || n >= len(want) {
		t.Errorf("with a one-chunk limit: %d lines, complete %v", n, complete)
	}
	writeLog(nil)
	if complete, err := ScanBack(path, 0, func([]byte) bool { t.Error("a line in an empty log"); return true }); !complete || err != nil {
		t.Errorf("empty log: %v %v", complete, err)
	}
}
