package acct

import (
	"bytes"
	"context"
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

// FindRecord looks in the live log, then the rotated generations up to the
// first gap, and gives the newest record of a JID.
func TestFindRecord_NewestFirst(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(JSONL+".2", `{"jid":"J000001","name":"old","state":"exited"}`+"\n")
	// J000003 carried over by the rotation: the live log's copy is given.
	write(JSONL+".1", `{"jid":"J000002","state":"exited"}`+"\n"+`{"jid":"J000003","name":"rotated","state":"rejected"}`+"\n")
	write(JSONL, `{"jid":"J000003","name":"live","state":"rejected"}`+"\n"+`{"jid":"J0000`+"\n"+
		`{"jid":"J000004","state":"exited"}`+"\n"+`{"jid":"J000005","state":"exited"}`)
	// A generation past a gap (a reaper killed between a rotation's two
	// renames) is the log's too, the oldest.
	write(JSONL+".4", `{"jid":"J000006","state":"exited"}`+"\n")

	ctx := context.Background()
	for _, c := range []struct {
		jid, name string
		found     bool
	}{
		{"J000001", "old", true},
		{"J000002", "", true},
		{"J000003", "live", true},
		{"J000004", "", true},
		{"J000005", "", false}, // no newline yet: an append in progress
		{"J000006", "", true},
		{"J000007", "", false},
	} {
		r, found, err := FindRecord(ctx, dir, c.jid)
		if err != nil || found != c.found || found && (r.JID != c.jid || r.Name != c.name) {
			t.Errorf("FindRecord(%s) = %+v, %v, %v; want found %v, name %q", c.jid, r, found, err, c.found, c.name)
		}
	}
	if _, found, err := FindRecord(ctx, t.TempDir(), "J000001"); found || err != nil {
		t.Errorf("FindRecord in no log: %v %v", found, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	big := make([]byte, 0, 5000*40)
	for i := 0; i < 5000; i++ {
		big = append(big, `{"jid":"J000009","state":"exited"}`+"\n"...)
	}
	write(JSONL, string(big))
	if _, _, err := FindRecord(cancelled, dir, "J000008"); err != context.Canceled {
		t.Errorf("FindRecord with a cancelled context: %v", err)
	}
}
