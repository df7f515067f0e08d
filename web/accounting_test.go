package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"msched/daemons"
	"msched/spool"
)

// writeLog writes the accounting log of sp as raw bytes.
func writeLog(t *testing.T, sp *spool.Spool, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(sp.Path(spool.DirDB), accountingFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func newSpool(t *testing.T) *spool.Spool {
	t.Helper()
	sp, err := spool.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// scanBack gives every whole line, last first, whatever the chunk
// boundaries, skips a last line without its newline, and stops when asked.
func TestScanBack_LinesAcrossChunks(t *testing.T) {
	sp := newSpool(t)
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
		writeLog(t, sp, append(bytes.Clone(data), tail...))
		var got []string
		complete, err := scanBack(sp, 0, func(line []byte) bool { got = append(got, string(line)); return true })
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
	writeLog(t, sp, data)
	n := 0
	complete, _ := scanBack(sp, 0, func([]byte) bool { n++; return n < 5 })
	if n != 5 || !complete {
		t.Errorf("stopped after %d lines, complete %v", n, complete)
	}
	n = 0
	complete, _ = scanBack(sp, scanChunk, func([]byte) bool { n++; return true })
	if complete || n == 0 || n >= len(want) {
		t.Errorf("with a one-chunk limit: %d lines, complete %v", n, complete)
	}
	writeLog(t, sp, nil)
	if complete, err := scanBack(sp, 0, func([]byte) bool { t.Error("a line in an empty log"); return true }); !complete || err != nil {
		t.Errorf("empty log: %v %v", complete, err)
	}
}

// The page's Record reads every field of the daemons' record that it
// shows, under the same JSON names.
func TestRecord_DecodesTheDaemonsRecord(t *testing.T) {
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	d := daemons.Record{JID: "J000042", Name: "n", User: "alice", Executable: "/bin/x", Model: "m", Hosts: []string{"a", "b"},
		SubmittedAt: at, StartedAt: at.Add(time.Minute), EndedAt: at.Add(time.Hour), WaitSeconds: ptr(60.0),
		PredictedSeconds: ptr(3000.0), ActualSeconds: ptr(3540.0), ExitStatus: ptr(2), Signal: "KILL", State: "exited",
		Reason: "why", Attempts: 2, Cancelled: true, SWFStatus: 5}
	line, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := parseRecordLine(line)
	if !ok {
		t.Fatal("not parsed")
	}
	want := Record{JID: d.JID, Name: d.Name, User: d.User, Executable: d.Executable, Model: d.Model, Hosts: d.Hosts,
		SubmittedAt: d.SubmittedAt, StartedAt: d.StartedAt, EndedAt: d.EndedAt, WaitSeconds: d.WaitSeconds,
		PredictedSeconds: d.PredictedSeconds, ActualSeconds: d.ActualSeconds, ExitStatus: d.ExitStatus, Signal: d.Signal,
		State: d.State, Reason: d.Reason, Attempts: d.Attempts, Cancelled: d.Cancelled}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("decoded %+v\nwant    %+v", r, want)
	}
	// Every field of web's Record is one of the daemons' (same JSON name).
	dt := reflect.TypeOf(daemons.Record{})
	names := map[string]bool{}
	for i := 0; i < dt.NumField(); i++ {
		names[strings.Split(dt.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	wt := reflect.TypeOf(Record{})
	for i := 0; i < wt.NumField(); i++ {
		if n := strings.Split(wt.Field(i).Tag.Get("json"), ",")[0]; !names[n] {
			t.Errorf("web's Record has %q, which daemons.Record does not write", n)
		}
	}
	// A torn append glued to the record written again after it.
	torn := append([]byte(`{"jid":"J000042","name":"d-00`), line...)
	if r, ok := parseRecordLine(torn); !ok || r.JID != "J000042" {
		t.Errorf("torn line: %+v %v", r, ok)
	}
}

// findRecord finds the last record of a JID, whatever is around it.
func TestFindRecord(t *testing.T) {
	sp := newSpool(t)
	var data []byte
	for i := 0; i < 2000; i++ {
		data = fmt.Appendf(data, `{"jid":"J%06d","name":"job %d","state":"exited"}`+"\n", i, i)
	}
	writeLog(t, sp, data)
	for _, jid := range []string{"J000000", "J001000", "J001999"} {
		r, err := findRecord(sp, jid)
		if err != nil || r == nil || r.JID != jid {
			t.Errorf("%s: %+v %v", jid, r, err)
		}
	}
	if r, err := findRecord(sp, "J777777"); r != nil || err != nil {
		t.Errorf("a JID never recorded: %+v %v", r, err)
	}
}
