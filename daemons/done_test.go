package daemons

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"msched/acct"
)

// The accounting log answers for whole records only: a line torn by a
// crash in an append does not make its JID done (its job file was not
// removed then), but a torn start glued to the whole record written again
// after it (an older msched on a full disk) does, a line longer than any
// record is passed over, and a log not yet written means nothing was
// reaped.
func TestJIDsInLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), acct.JSONL)
	ctx := context.Background()
	got, err := jidsInLog(ctx, path, []string{"J000001"})
	if err != nil || len(got) != 0 {
		t.Fatalf("no log: %v, %v", got, err)
	}
	log := strings.Join([]string{
		`{"jid":"J000001","name":"a","state":"exited","swf_status":1}`,
		`{"jid":"J000002","name":"huge","reason":"` + strings.Repeat("x", acct.MaxRecordLine) + `","state":"rejected","swf_status":0}`,
		`{"jid":"J000003","name":"b","state":"rejected","swf_status":0}`,
		`{"jid":"J000005","name":"d-00{"jid":"J000005","name":"glued","state":"exited","swf_status":1}`,
		`{"jid":"J000004","name":"torn`,
	}, "\n")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = jidsInLog(ctx, path, []string{"J000001", "J000002", "J000003", "J000004", "J000005", "J000006"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got["J000001"] || !got["J000003"] || !got["J000005"] {
		t.Errorf("done %v; want J000001, J000003 and J000005", got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := jidsInLog(cancelled, path, []string{"J000001"}); err == nil {
		t.Error("a cancelled context did not stop the read")
	}
}
