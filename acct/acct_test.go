package acct

import (
	"context"
	"fmt"
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
	// A generation past a gap (a reaper killed between a rotation's two
	// renames) is the log's too, the oldest.
	write(JSONL+".4", `{"jid":"J000000","state":"exited"}`+"\n")

	var got []string
	if err := ReadRecords(context.Background(), dir, func(r Record) bool { got = append(got, r.JID); return true }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"J000000", "J000001", "J000002", "J000003", "J000004", "J000005"}; !slices.Equal(got, want) {
		t.Errorf("ReadRecords: %v; want %v", got, want)
	}
	got = nil
	if err := ReadRecords(context.Background(), dir, func(r Record) bool { got = append(got, r.JID); return r.JID != "J000002" }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"J000000", "J000001", "J000002"}; !slices.Equal(got, want) {
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

// ReadRecordsOf gives the records of the JIDs asked for, as ReadRecords
// would: once, from the older generation, a record glued after a torn
// start included, and stops when asked.
func TestReadRecordsOf(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(JSONL+".1", `{"jid":"J000001","state":"exited"}`+"\n"+`{"jid":"J000002","state":"rejected","reason":"old"}`+"\n")
	write(JSONL, `{"jid":"J000002","state":"rejected","reason":"copy"}`+"\n"+
		`{"jid":"J000003","name":"d-00{"jid":"J000004","state":"exited"}`+"\n"+
		`{"jid":"J000005","name":"{\"jid\":\"J000006\"}","state":"exited"}`+"\n"+
		`{"jid":"J000006","state":"exited"}`+"\n")
	read := func(jids []string, stop string) []string {
		var got []string
		err := ReadRecordsOf(context.Background(), dir, jids, func(r Record) bool {
			got = append(got, r.JID+":"+r.Reason)
			return r.JID != stop
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := read([]string{"J000002", "J000004", "J000006", "J000009"}, ""), []string{"J000002:old", "J000004:", "J000006:"}; !slices.Equal(got, want) {
		t.Errorf("ReadRecordsOf: %v; want %v", got, want)
	}
	if got, want := read([]string{"J000001", "J000002", "J000006"}, "J000002"), []string{"J000001:", "J000002:old"}; !slices.Equal(got, want) {
		t.Errorf("ReadRecordsOf stopped at J000002: %v; want %v", got, want)
	}
	if got := read(nil, ""); len(got) != 0 {
		t.Errorf("ReadRecordsOf of no JID: %v", got)
	}
}

// Mentions finds a JID as a record's "jid", wherever on the line, and not
// as the text of a value (escaped quotes) or a prefix of another JID.
func TestMentions(t *testing.T) {
	want := map[string]bool{"J000007": true}
	for line, ok := range map[string]bool{
		`{"jid":"J000007","state":"exited"}`:                      true,
		`{"jid":"J000001","name":"x{"jid":"J000007","state":"x"}`: true,
		`{"jid":"J0000071","state":"exited"}`:                     false,
		`{"jid":"J000001","name":"\"jid\":\"J000007\""}`:          false,
		`{"jid":"J000001","note":"J000007"}`:                      false,
		`{"jid":"`:                                                false,
		``:                                                        false,
	} {
		if Mentions([]byte(line), want) != ok {
			t.Errorf("Mentions(%s) = %v, want %v", line, !ok, ok)
		}
	}
}

// BenchmarkReadRecords reads a log of 100,000 records for two JIDs, as
// sched's dependency lookup does: every record decoded (ReadRecords), or
// only those that mention the JIDs (ReadRecordsOf).
func BenchmarkReadRecords(b *testing.B) {
	dir := b.TempDir()
	var log []byte
	for i := range 100_000 {
		log = fmt.Appendf(log, `{"jid":"J%06d","name":"sweep-%d","user":"alice","uid":1001,"executable":"/home/alice/bin/sim","hosts":["a/cpu0","a/cpu1"],"submitted_at":"2026-01-02T03:04:05Z","started_at":"2026-01-02T03:05:05Z","ended_at":"2026-01-02T04:05:05Z","wait_seconds":60,"predicted_seconds":3500,"actual_seconds":3600,"exit_status":0,"state":"exited","swf_status":1}`+"\n", i+1, i)
	}
	if err := os.WriteFile(filepath.Join(dir, JSONL), log, 0o644); err != nil {
		b.Fatal(err)
	}
	jids := []string{"J050000", "J200000"} // one there, one not: the whole log is read
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			n := 0
			if err := ReadRecords(context.Background(), dir, func(r Record) bool {
				if slices.Contains(jids, r.JID) {
					n++
				}
				return true
			}); err != nil || n != 1 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("of", func(b *testing.B) {
		for b.Loop() {
			n := 0
			if err := ReadRecordsOf(context.Background(), dir, jids, func(Record) bool { n++; return true }); err != nil || n != 1 {
				b.Fatal(n, err)
			}
		}
	})
}
