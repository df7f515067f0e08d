package acct

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// ReadRecords gives every record of the log's generations once, oldest
// first, skips what is no whole record, and stops when asked.
func TestReadRecords_Generations(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(JSONL+".2", `{"jid":"J000001","state":"exited"}`+"\n")
	write(JSONL+".1", `{"jid":"J000002","state":"exited"}`+"\n"+`{"jid":"J000003","state":"rejected"}`+"\n")
	// The live log: J000003 carried over by the rotation, a torn line, and
	// a last line a crash left without its newline.
	write(JSONL, `{"jid":"J000003","state":"rejected"}`+"\n"+`{"jid":"J0000`+"\n"+
		`{"jid":"J000004","state":"exited"}`+"\n"+`{"jid":"J000005","state":"exited"}`)
	// A generation past a gap is not the log's (keep was lowered since).
	write(JSONL+".4", `{"jid":"J000000","state":"exited"}`+"\n")

	var got []string
	if err := ReadRecords(context.Background(), dir, func(r Record) bool { got = append(got, r.JID); return true }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"J000001", "J000002", "J000003", "J000004", "J000005"}; !slices.Equal(got, want) {
		t.Errorf("ReadRecords: %v; want %v", got, want)
	}
	got = nil
	if err := ReadRecords(context.Background(), dir, func(r Record) bool { got = append(got, r.JID); return r.JID != "J000002" }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"J000001", "J000002"}; !slices.Equal(got, want) {
		t.Errorf("ReadRecords stopped at J000002: %v; want %v", got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	big := make([]byte, 0, 5000*40)
	for i := 0; i < 5000; i++ {
		big = append(big, `{"jid":"J000009","state":"exited"}`+"\n"...)
	}
	write(JSONL, string(big))
	if err := ReadRecords(ctx, dir, func(Record) bool { return true }); err != context.Canceled {
		t.Errorf("ReadRecords with a cancelled context: %v", err)
	}
	if err := ReadRecords(context.Background(), t.TempDir(), func(Record) bool { t.Error("a record in no log"); return true }); err != nil {
		t.Errorf("ReadRecords of no log: %v", err)
	}
}
