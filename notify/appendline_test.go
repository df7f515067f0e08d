package notify

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"msched/internal/diskfull"
)

// A failure record appended on a full disk is whole or not there: a torn
// line would have the next record glued to it.
func TestAppendLine_FullDiskLeavesNoTornLine(t *testing.T) {
	fs := diskfull.Mount(t, 1<<20)
	path := filepath.Join(fs, "mail-failures.jsonl")
	if err := appendLine(path, []byte(`{"jid":"J000001"}`)); err != nil {
		t.Fatal(err)
	}
	free := diskfull.Fill(t, fs)
	big := []byte(`{"jid":"J000002","error":"` + strings.Repeat("x", 64<<10) + `"}`)
	if err := appendLine(path, big); err == nil {
		t.Fatal("a 64 KiB line appended on a full disk")
	}
	free()
	if err := appendLine(path, []byte(`{"jid":"J000003"}`)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte("{\"jid\":\"J000001\"}\n{\"jid\":\"J000003\"}\n"); !bytes.Equal(b, want) {
		t.Fatalf("log %q, want %q", b[:min(len(b), 200)], want)
	}
}
