package web

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/spool"
)

// Users write submitted/, and the page (which runs as root in `msched up`)
// lists it to anyone: it reads a file there as init does, so a link to a
// root-only file is not read through, a FIFO does not block the request,
// and a huge (sparse) file is not read; each is listed as a file that is
// not a job, with what it is.
func TestAPIJobs_SubmittedFilesAreReadAsUntrusted(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, path string) // makes the entry at path
		want string                          // in its "invalid"
	}{
		{"link to a root-only file", func(t *testing.T, path string) {
			secret := filepath.Join(t.TempDir(), "shadow")
			if err := os.WriteFile(secret, []byte("root:$y$j9T$hunter2hash:19000:0:99999:7:::\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(secret, path); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link"},
		{"FIFO", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "FIFO"},
		{"sparse file of 256 MiB", func(t *testing.T, path string) {
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(256 << 20); err != nil {
				t.Fatal(err)
			}
		}, "too large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp, err := spool.Create(filepath.Join(t.TempDir(), "spool"))
			if err != nil {
				t.Fatal(err)
			}
			c.make(t, filepath.Join(sp.Dir(spool.Submitted), "job.yaml"))
			h := New(Config{Spool: sp, Now: func() time.Time { return testNow }}).(*handler)
			done := make(chan string, 1)
			go func() { done <- get(t, h, "/api/jobs?state=submitted").Body.String() }()
			var body string
			select {
			case body = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("GET /api/jobs did not answer within 10 s")
			}
			if strings.Contains(body, "hunter2") {
				t.Fatalf("the page read through the link: %s", body)
			}
			var out struct {
				Jobs []JobView `json:"jobs"`
			}
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Fatal(err)
			}
			if len(out.Jobs) != 1 || out.Jobs[0].File != "job.yaml" || !strings.Contains(out.Jobs[0].Invalid, c.want) {
				t.Fatalf("jobs %+v, want job.yaml listed as not a job (%q)", out.Jobs, c.want)
			}
		})
	}
}
