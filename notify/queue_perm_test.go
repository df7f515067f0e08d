package notify_test

import (
	"os"
	"path/filepath"
	"testing"

	"msched/notify"
)

// The mail queue holds reports, which carry job output: only the reaper
// that mails them may read it, whatever mode an earlier version gave it.
func TestMailQueue_Private(t *testing.T) {
	db := t.TempDir()
	q := filepath.Join(db, notify.MailQueueDir)
	if err := os.Mkdir(q, 0o755); err != nil { // as versions before made it
		t.Fatal(err)
	}
	openMailer(t, notify.MailConfig{Host: "127.0.0.1", Port: 1, From: "msched@example.org"}, db)
	fi, err := os.Stat(q)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("%s is %v, want 0700", q, fi.Mode().Perm())
	}
}
