package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/internal/asuser"
	"msched/spool"
)

// Users with no password entry, for the tests below (run as root).
const (
	jobOwner = 12345
	stranger = 23456
)

// mschedIn runs msched with args on the spool at dir, in this process.
func mschedIn(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetArgs(append([]string{"--spool", dir}, args...))
	root.SetOut(&out)
	root.SetErr(&out)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// sharedSpool is a spool made by root, as `msched up` makes it, on a path
// every user may reach, with one queued job of jobOwner's.
func sharedSpool(t *testing.T) (*spool.Spool, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: acts as other users")
	}
	dir := filepath.Join(t.TempDir(), "spool")
	sp, err := spool.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(dir); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	uid := jobOwner
	j := &spool.Job{JID: "J000001", Name: "theirs", Command: []string{"true"}, User: spool.UserName(uid), UID: &uid,
		SubmittedAt: time.Now().UTC(), History: []spool.Event{{State: spool.Submitted, At: time.Now().UTC()}, {State: spool.Queued, At: time.Now().UTC()}}}
	b, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := spool.WriteAtomic(sp.Dir(spool.Queued), j.JID, b); err != nil {
		t.Fatal(err)
	}
	return sp, dir
}

func as(t *testing.T, uid int, fn func() error) {
	t.Helper()
	if err := asuser.Run(uid, fn); err != nil {
		t.Fatal(err)
	}
}

// msched cancel refuses at once, writing nothing, when the caller is
// neither the job's owner nor root; the owner's cancel is written as the
// owner's request.
func TestCancel_CLIOnlyOwnerOrRoot(t *testing.T) {
	sp, dir := sharedSpool(t)
	as(t, stranger, func() error {
		_, err := mschedIn(t, dir, "cancel", "J000001")
		want := "J000001 belongs to uid12345; only uid12345 or root may cancel it"
		if err == nil || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("cancel by another user: %v; want %q", err, want)
		}
		return nil
	})
	if cs, _ := sp.Controls(); len(cs) != 0 {
		t.Fatalf("a refused cancel wrote %d requests", len(cs))
	}
	as(t, jobOwner, func() error {
		_, err := mschedIn(t, dir, "cancel", "J000001")
		return err
	})
	cs, _ := sp.Controls()
	if len(cs) != 1 || cs[0].UID != jobOwner || !strings.HasPrefix(cs[0].File(), fmt.Sprintf("cancel.J000001.%d.", jobOwner)) {
		t.Fatalf("the owner's cancel: %+v", cs)
	}
}

// A report is its owner's alone; another user's msched status says whose
// it is instead of a raw "open …: permission denied".
func TestStatus_AnotherUsersReport(t *testing.T) {
	sp, dir := sharedSpool(t)
	report := filepath.Join(sp.Path(spool.DirReports), "J000002.txt")
	if err := os.WriteFile(report, []byte("To: x\n\nprivate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(report, jobOwner, jobOwner); err != nil {
		t.Fatal(err)
	}
	as(t, stranger, func() error {
		_, err := mschedIn(t, dir, "status", "J000002")
		if want := "permission denied: J000002 belongs to uid12345"; err == nil || !strings.HasPrefix(err.Error(), want) {
			return fmt.Errorf("status of another user's report: %v; want %q…", err, want)
		}
		return nil
	})
	as(t, jobOwner, func() error {
		out, err := mschedIn(t, dir, "status", "J000002")
		if err != nil || !strings.Contains(out, "private") {
			return fmt.Errorf("the owner's status: %q, %v", out, err)
		}
		return nil
	})
}

// msched submit records the directory it ran in as submit_dir, keeping the
// user's text and comments, and refuses a file over the size limit before
// submitting anything.
func TestSubmit_RecordsSubmitDirAndLimit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	if _, err := spool.Create(dir); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	t.Chdir(cwd)
	job := "# a job\nname: here   # its name\ncommand: [\"./prog\"]\n"
	os.WriteFile("job.yaml", []byte(job), 0o644)
	os.WriteFile("fixed.yaml", []byte(job+"submit_dir: /elsewhere\n"), 0o644)
	os.WriteFile("big.yaml", append([]byte(job), bytes.Repeat([]byte("#\n"), spool.MaxJobFile)...), 0o644)

	if _, err := mschedIn(t, dir, "submit", "job.yaml", "big.yaml"); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("submit of a file over the limit: %v", err)
	}
	sub := filepath.Join(dir, string(spool.Submitted))
	if es, _ := os.ReadDir(sub); len(es) != 0 {
		t.Fatalf("%d files submitted with an invalid one", len(es))
	}
	// What init would refuse, submit refuses: a section the daemons write.
	os.WriteFile("forged.yaml", []byte(job+"uid: 0\n"), 0o644)
	if out, err := mschedIn(t, dir, "submit", "forged.yaml"); err == nil || !strings.Contains(out+err.Error(), "uid: set by msched") {
		t.Fatalf("submit of a file that sets uid: %v\n%s", err, out)
	}
	if _, err := mschedIn(t, dir, "submit", "job.yaml", "fixed.yaml"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"job.yaml":   job + "submit_dir: " + cwd + "\n",
		"fixed.yaml": job + "submit_dir: /elsewhere\n",
	} {
		b, err := os.ReadFile(filepath.Join(sub, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want {
			t.Errorf("%s submitted as:\n%s\nwant:\n%s", name, b, want)
		}
	}
	// A relative program resolves against it: the job file says where.
	b, _ := os.ReadFile(filepath.Join(sub, "job.yaml"))
	if j, err := spool.Parse("job.yaml", b); err != nil || j.SubmitDir != cwd {
		t.Errorf("parsed: %v %v", j, err)
	}
}
