package web

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"msched/acct"
	"msched/spool"
)

// writeLog writes the accounting log of sp as raw bytes, and the JID
// counter as init would have left it (jidsGiven).
func writeLog(t *testing.T, sp *spool.Spool, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(sp.Path(spool.DirDB), acct.JSONL), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if r, ok := acct.ParseRecordLine(line); ok {
			if _, valid := spool.JIDNumber(r.JID); valid {
				jidsGiven(t, sp, r.JID)
			}
		}
	}
}

// jidsGiven makes the spool's JID counter (db/jid, README) say that jid
// has been given, as init leaves it before a job exists: the page answers
// a JID above the counter without reading the log (findRecord).
func jidsGiven(tb testing.TB, sp *spool.Spool, jid string) {
	tb.Helper()
	n, ok := spool.JIDNumber(jid)
	if !ok {
		tb.Fatalf("jidsGiven: %q is not a JID", jid)
	}
	last, err := sp.LastJID()
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sp.Path(spool.DirDB), "jid"), []byte(strconv.FormatInt(max(n, last), 10)+"\n"), 0o644); err != nil {
		tb.Fatal(err)
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

// findRecord finds the last record of a JID, whatever is around it.
func TestFindRecord(t *testing.T) {
	sp := newSpool(t)
	var data []byte
	for i := 1; i <= 2000; i++ {
		data = fmt.Appendf(data, `{"jid":"J%06d","name":"job %d","state":"exited"}`+"\n", i, i)
	}
	writeLog(t, sp, data)
	for _, jid := range []string{"J000001", "J001000", "J002000"} {
		r, err := findRecord(sp, jid)
		if err != nil || r == nil || r.JID != jid {
			t.Errorf("%s: %+v %v", jid, r, err)
		}
	}
	if r, err := findRecord(sp, "J777777"); r != nil || err != nil {
		t.Errorf("a JID never recorded: %+v %v", r, err)
	}
}

// A JID that is not one, or is above the JID counter, is answered without
// reading the log: any visitor may ask for /jobs/J999999, and a miss reads
// every generation. A counter that cannot be read does not hide a record.
func TestFindRecord_AboveCounterNotRead(t *testing.T) {
	sp := newSpool(t)
	writeLog(t, sp, []byte(`{"jid":"J000004","state":"exited"}`+"\n"+`{"jid":"J000005","state":"exited"}`+"\n"))
	counter := filepath.Join(sp.Path(spool.DirDB), "jid")
	// A record above the counter cannot be (init writes the counter
	// before the job exists): finding it would mean the log was read.
	if err := os.WriteFile(counter, []byte("4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for jid, want := range map[string]bool{"J000004": true, "J000005": false, "J5": false, "J000000": false} {
		if r, err := findRecord(sp, jid); err != nil || (r != nil) != want {
			t.Errorf("findRecord(%q) with the counter at 4: %+v %v; want found %v", jid, r, err, want)
		}
	}
	if err := os.WriteFile(counter, []byte("damaged\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := findRecord(sp, "J000005"); err != nil || r == nil {
		t.Errorf("findRecord with a damaged counter: %+v %v", r, err)
	}
}

// A reaped job's record is found in a rotated log too, and a line too long
// for any record does not end the reading of the rest (found in review).
func TestFindRecord_RotatedAndLongLines(t *testing.T) {
	sp := newSpool(t)
	db := sp.Path(spool.DirDB)
	jidsGiven(t, sp, "J000003")
	if err := os.WriteFile(filepath.Join(db, acct.JSONL+".1"), []byte(`{"jid":"J000001","state":"exited"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := `{"jid":"J000002","name":"` + strings.Repeat("x", acct.MaxRecordLine) + `","state":"exited"}` + "\n"
	writeLog(t, sp, []byte(long+`{"jid":"J000003","state":"exited"}`+"\n"))
	if r, err := findRecord(sp, "J000001"); err != nil || r == nil || r.JID != "J000001" {
		t.Errorf("rotated record: %+v %v", r, err)
	}
	rs, err := readAccounting(sp)
	if err != nil || len(rs) != 1 || rs[0].JID != "J000003" {
		t.Errorf("after an overlong line: %+v %v", rs, err)
	}
}
