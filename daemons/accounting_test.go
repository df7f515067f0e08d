package daemons

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/acct"
	"msched/internal/diskfull"
	"msched/spool"
)

// accountedJobs makes n finished jobs, numbered from first, to record.
func accountedJobs(first, n int) []*spool.Job {
	sub := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var jobs []*spool.Job
	for i := first; i < first+n; i++ {
		zero := i % 2
		jobs = append(jobs, &spool.Job{JID: spool.FormatJID(int64(i)), Name: fmt.Sprintf("disk-filler-%04d", i),
			User: "alice", Command: []string{"./simulate", "--steps", "1000"}, SubmittedAt: sub,
			Schedule: &spool.Schedule{Hosts: []string{"h0", "h1"}, PredictedSeconds: 10},
			Run:      &spool.RunInfo{StartedAt: sub.Add(time.Second), EndedAt: sub.Add(9 * time.Second), ExitStatus: &zero, Attempts: 1}})
	}
	return jobs
}

// checkLogs fails the test unless both logs in dir hold whole lines only,
// and returns how many records each holds per JID.
func checkLogs(t *testing.T, dir string) (jsonl, swf map[string]int) {
	t.Helper()
	jsonl, swf = map[string]int{}, map[string]int{}
	b, err := os.ReadFile(filepath.Join(dir, acct.JSONL))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("accounting.jsonl ends in a torn line: …%q", b[max(0, len(b)-60):])
	}
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var r acct.Record // a record glued to a torn one does not decode
		if err := json.Unmarshal(l, &r); err != nil || r.JID == "" {
			t.Errorf("accounting.jsonl: torn line %q: %v", l, err)
			continue
		}
		jsonl[r.JID]++
	}
	b, err = os.ReadFile(filepath.Join(dir, acct.SWF))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("accounting.swf ends in a torn line: …%q", b[max(0, len(b)-60):])
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" || strings.HasPrefix(l, ";") {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 18 {
			t.Errorf("accounting.swf: torn line %q", l)
			continue
		}
		swf["J"+strings.Repeat("0", max(0, 6-len(f[0])))+f[0]]++
	}
	return jsonl, swf
}

// An append that finds the disk full leaves no part of itself in either
// log, and once space is back the same records are appended whole, once
// each (issue 13, item 2: accounting.jsonl held
// `{"jid":"J000080","name":"d-00{"jid":"J000080",…`). On a real full tmpfs:
// a batch of 30 records fills the JSON log's last page and fails there
// (the SWF lines fit); one of 100 fails in the SWF log already.
func TestAccounting_FullDiskLeavesWholeRecords(t *testing.T) {
	for _, batch := range []int{30, 100} {
		t.Run(fmt.Sprint(batch), func(t *testing.T) {
			dir := diskfull.Mount(t, 1<<20)
			a, err := openAccounting(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { a.close() }()
			if err := a.record(accountedJobs(1, 1)...); err != nil {
				t.Fatal(err)
			}
			free := diskfull.Fill(t, dir)
			jobs := accountedJobs(2, batch)
			err = a.record(jobs...)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("record on a full disk: %v, want ENOSPC", err)
			}
			checkLogs(t, dir)
			free()
			if err := a.record(jobs...); err != nil {
				t.Fatalf("record once space is back: %v", err)
			}
			a.close()
			if a, err = openAccounting(dir); err != nil {
				t.Fatal(err)
			}
			jsonl, swf := checkLogs(t, dir)
			for _, j := range append(accountedJobs(1, 1), jobs...) {
				if jsonl[j.JID] != 1 || swf[j.JID] != 1 {
					t.Errorf("%s: %d JSON records, %d SWF lines; want 1 each", j.JID, jsonl[j.JID], swf[j.JID])
				}
				if !a.inJSONL[j.JID] || !a.inSWF[j.JID] {
					t.Errorf("%s not known as recorded after a reopen", j.JID)
				}
			}
		})
	}
}

// failingFile is a log file whose next write stops after n bytes with
// err (as a write does when the disk fills up half-way), or whose next
// fsync fails with syncErr; each failure happens once.
type failingFile struct {
	*os.File
	n       int
	err     error
	syncErr error
}

func (f *failingFile) Write(b []byte) (int, error) {
	if f.err == nil || len(b) <= f.n {
		return f.File.Write(b)
	}
	m, werr := f.File.Write(b[:f.n])
	err := f.err
	f.err = nil
	if werr != nil {
		return m, werr
	}
	return m, &os.PathError{Op: "write", Path: f.Name(), Err: err}
}

func (f *failingFile) Sync() error {
	if err := f.syncErr; err != nil {
		f.syncErr = nil
		return &os.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return f.File.Sync()
}

// The same without a full disk: a write that stops half-way, or an fsync
// that fails after a whole write (ext4 reports a full disk at fsync for
// delayed allocations), is cut back, and the records go in whole on the
// next try.
func TestAccounting_FailedAppendIsCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		ff   func(f *os.File) *failingFile
	}{
		{"short write", func(f *os.File) *failingFile { return &failingFile{File: f, n: 100, err: syscall.ENOSPC} }},
		{"short write, EIO", func(f *os.File) *failingFile { return &failingFile{File: f, n: 1, err: syscall.EIO} }},
		{"fsync fails", func(f *os.File) *failingFile { return &failingFile{File: f, syncErr: syscall.ENOSPC} }},
	} {
		for _, log := range []string{acct.JSONL, acct.SWF} {
			t.Run(tc.name+"/"+log, func(t *testing.T) {
				dir := t.TempDir()
				a, err := openAccounting(dir)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { a.close() }()
				if err := a.record(accountedJobs(1, 2)...); err != nil {
					t.Fatal(err)
				}
				l := a.jsonl
				if log == acct.SWF {
					l = a.swf
				}
				l.f = tc.ff(l.f.(*os.File))
				jobs := accountedJobs(3, 3)
				if err := a.record(jobs...); err == nil {
					t.Fatal("the failure was not reported")
				}
				checkLogs(t, dir)
				if err := a.record(jobs...); err != nil {
					t.Fatal(err)
				}
				jsonl, swf := checkLogs(t, dir)
				for _, j := range accountedJobs(1, 5) {
					if jsonl[j.JID] != 1 || swf[j.JID] != 1 {
						t.Errorf("%s: %d JSON records, %d SWF lines; want 1 each", j.JID, jsonl[j.JID], swf[j.JID])
					}
				}
			})
		}
	}
}

// A log written by an msched that glued a record to a torn one (the line
// of issue 13) still counts that record, so that it is not appended a
// second time; a torn last line is cut at open.
func TestAccounting_ReadsGluedRecord(t *testing.T) {
	dir := t.TempDir()
	whole := `{"jid":"J000080","name":"d-0080","state":"exited","swf_status":1}`
	torn := `{"jid":"J000080","name":"d-00`
	content := whole[:0] + `{"jid":"J000079","state":"exited","swf_status":1}` + "\n" + torn + whole + "\n" + `{"jid":"J000081","na`
	if err := os.WriteFile(filepath.Join(dir, acct.JSONL), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := openAccounting(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	for jid, want := range map[string]bool{"J000079": true, "J000080": true, "J000081": false} {
		if a.inJSONL[jid] != want {
			t.Errorf("%s recorded: %v, want %v", jid, a.inJSONL[jid], want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, acct.JSONL))
	if !bytes.HasSuffix(b, []byte(whole+"\n")) {
		t.Errorf("torn last line not cut: %q", b)
	}
	if r, ok := acct.ParseRecordLine([]byte(torn + whole)); !ok || r.JID != "J000080" || r.Name != "d-0080" {
		t.Errorf("ParseRecordLine of a glued line: %+v, %v", r, ok)
	}
	if _, ok := acct.ParseRecordLine([]byte(torn)); ok {
		t.Error("a torn line parsed")
	}
}

// A record stays under acct.MaxRecordLine, which every reader of the log
// skips past, whatever a user's file put in it: here a name and an
// executable of '<' (six bytes each once JSON-escaped) as long as a job
// file and a word may be, a model's name as long as a job file, and a long
// reason.
func TestNewRecord_FitsInALineOfTheLog(t *testing.T) {
	one := 1
	j := &spool.Job{JID: "J000001", Name: strings.Repeat("<", spool.MaxJobFile), Command: []string{strings.Repeat("<", spool.MaxArgLen)},
		Model:  &spool.Model{Name: strings.Repeat("<", spool.MaxJobFile)},
		Reason: strings.Repeat("<", 64<<10), Run: &spool.RunInfo{ExitStatus: &one}}
	line, err := json.Marshal(NewRecord(j))
	if err != nil {
		t.Fatal(err)
	}
	if len(line) >= acct.MaxRecordLine {
		t.Fatalf("a record of %d bytes, over the %d a reader of the log looks at", len(line), acct.MaxRecordLine)
	}
	r, ok := acct.ParseRecordLine(line)
	if !ok || r.JID != "J000001" || !strings.HasPrefix(r.Name, "<<<<") || !strings.HasSuffix(r.Name, "…") {
		t.Fatalf("the record does not read back whole (%v): JID %q, name %.20q", ok, r.JID, r.Name)
	}
}
