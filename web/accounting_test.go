package web

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"msched/acct"
	"msched/spool"
)

// writeLog writes the accounting log of sp as raw bytes.
func writeLog(t *testing.T, sp *spool.Spool, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(sp.Path(spool.DirDB), acct.JSONL), data, 0o644); err != nil {
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

// A reaped job's record is found in a rotated log too, and a line too long
// for any record does not end the reading of the rest (found in review).
func TestFindRecord_RotatedAndLongLines(t *testing.T) {
	sp := newSpool(t)
	db := sp.Path(spool.DirDB)
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
