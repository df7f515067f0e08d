package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/spool"
)

// newSubmitSpool makes a spool and moves into a fresh directory for the
// job files; it returns the spool's path.
func newSubmitSpool(t *testing.T) (*spool.Spool, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "spool")
	sp, err := spool.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	return sp, dir
}

func submittedFiles(t *testing.T, sp *spool.Spool) []string {
	t.Helper()
	es, err := os.ReadDir(sp.Dir(spool.Submitted))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// Issue 13: `msched submit` hung on a FIFO given as the job file. It opens
// its input without blocking and without following a link, and refuses
// what is no regular file, as init does in submitted/.
func TestSubmit_RefusesWhatIsNoFile(t *testing.T) {
	sp, dir := newSubmitSpool(t)
	os.WriteFile("job.yaml", []byte("command: [\"./prog\"]\n"), 0o644)
	os.Symlink("job.yaml", "link.yaml")
	os.Mkdir("dir.yaml", 0o755)
	if err := syscall.Mkfifo("fifo.yaml", 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{"fifo.yaml", "fifo.yaml: a FIFO, not a regular file"},
		{"link.yaml", "link.yaml: a symbolic link, not a file"},
		{"dir.yaml", "dir.yaml: a directory, not a regular file"},
		{"/dev/zero", "/dev/zero: a device, not a regular file"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			type result struct {
				out string
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := mschedIn(t, dir, "submit", "job.yaml", tc.file)
				done <- result{out, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				// Blocked in open(2) or read(2) of the FIFO: give it a
				// writer that goes at once, so that it ends, and fail.
				if fd, err := syscall.Open("fifo.yaml", syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					syscall.Close(fd)
				}
				<-done
				t.Fatalf("msched submit %s blocked for 20 s", tc.file)
			}
			if r.err == nil || !strings.Contains(r.err.Error(), tc.want) || !strings.Contains(r.err.Error(), "nothing submitted") {
				t.Errorf("submit %s: %v\n%s\nwant an error saying %q and that nothing was submitted", tc.file, r.err, r.out, tc.want)
			}
			if fs := submittedFiles(t, sp); len(fs) != 0 {
				t.Errorf("submitted %q with %s", fs, tc.file)
			}
		})
	}
}

// msched submit refuses exactly what init would reject of the file it
// writes, and init accepts what it submits: both judge with one function
// (spool.ParseSubmission, the size bound before it).
func TestSubmit_ChecksWhatInitChecks(t *testing.T) {
	sp, dir := newSubmitSpool(t)
	init := sp.As(spool.Init)
	for _, tc := range []struct{ name, data string }{
		{"valid", "name: x\ncommand: [\"./prog\", -n, \"5\"]\nhosts: {min: 1, max: 4}\n"},
		{"sets user", "command: [a]\nuser: root\n"},
		{"sets uid", "command: [a]\nuid: 0\n"},
		{"sets history", "command: [a]\nhistory: []\n"},
		{"an alias", "x: &x [a]\ncommand: *x\n"},
		{"argv of 5,000 words", "command: [" + strings.Repeat("a, ", 4999) + "a]\n"},
		{"argv of 262,144 words", "command: [" + strings.Repeat("a,", 262143) + "a]\n"},
		{"env of 2,000 variables", "command: [a]\nenv: {" + envVars(2000) + "}\n"},
		{"nested 10,000 deep", "command: [a]\nname: " + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + "\n"},
		{"unknown field", "command: [a]\ncomand: [b]\n"},
		{"at the size bound", "command: [a]\n" + strings.Repeat("#", spool.MaxJobFile-len("command: [a]\n"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := strings.ReplaceAll(tc.name, " ", "-") + ".yaml"
			if err := os.WriteFile(file, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			out, submitErr := mschedIn(t, dir, "submit", file)
			// Init judges what submit wrote, or, if it wrote nothing,
			// what it would have written (the file with submit_dir).
			name := file
			if submitErr != nil {
				cwd, _ := os.Getwd()
				data, err := spool.SetSubmitDir([]byte(tc.data), cwd)
				if err != nil {
					data = []byte(tc.data)
				}
				if name, err = sp.Submit(file, data); err != nil {
					if strings.Contains(err.Error(), "over the limit") && strings.Contains(out+submitErr.Error(), "over the limit") {
						return // neither submits it
					}
					t.Fatal(err)
				}
			}
			c, err := init.Claim(name)
			if err != nil {
				t.Fatal(err)
			}
			_, initErr := c.Job()
			if (submitErr == nil) != (initErr == nil) {
				t.Errorf("msched submit: %v\n%s\ninit: %.300v", submitErr, out, initErr)
			}
			if initErr != nil && !strings.Contains(out, "invalid") {
				t.Errorf("submit's output does not say why: %s", out)
			}
		})
	}
}

func envVars(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "V%d: b, ", i)
	}
	return b.String()
}

// init.max_job_bytes bounds what msched submit sends; a bound out of range
// is an error naming the key.
func TestSubmit_MaxJobBytesFromConfig(t *testing.T) {
	sp, dir := newSubmitSpool(t)
	job := "command: [a]\n" + strings.Repeat("# comment\n", 300)
	os.WriteFile("job.yaml", []byte(job), 0o644)
	t.Setenv("MSCHED_INIT_MAX_JOB_BYTES", "2048")
	if _, err := mschedIn(t, dir, "submit", "job.yaml"); err == nil || !strings.Contains(err.Error(), "over the limit of 2048 bytes") {
		t.Errorf("submit of %d bytes under init.max_job_bytes 2048: %v", len(job), err)
	}
	t.Setenv("MSCHED_INIT_MAX_JOB_BYTES", "4096")
	if out, err := mschedIn(t, dir, "submit", "job.yaml"); err != nil {
		t.Errorf("submit of %d bytes under init.max_job_bytes 4096: %v\n%s", len(job), err, out)
	}
	t.Setenv("MSCHED_INIT_MAX_JOB_BYTES", "10")
	if _, err := mschedIn(t, dir, "submit", "job.yaml"); err == nil || !strings.Contains(err.Error(), "init.max_job_bytes") {
		t.Errorf("init.max_job_bytes 10: %v", err)
	}
	if fs := submittedFiles(t, sp); len(fs) != 1 {
		t.Errorf("submitted %q, want the one accepted", fs)
	}
	var pe *spool.ParseError
	if _, err := sp.CheckSubmission("x", []byte(job+strings.Repeat("#", spool.MaxJobFile))); !errors.As(err, &pe) {
		t.Errorf("CheckSubmission of a file over the bound: %v", err)
	}
}

// msched submit checks with the bound init claims with, as init published
// it, when the user's own configuration says otherwise (the daemons'
// msched.yaml is 0600 when it holds secrets: a user's submit cannot read
// init.max_job_bytes there).
func TestSubmit_UsesTheBoundInitPublished(t *testing.T) {
	sp, dir := newSubmitSpool(t)
	job := "command: [a]\n" + strings.Repeat("# comment\n", 300) // 3 KB
	os.WriteFile("job.yaml", []byte(job), 0o644)
	cmd := exec.Command(mschedBin, "daemon", "init")
	cmd.Env = append(testEnv(dir), "MSCHED_INIT_MAX_JOB_BYTES=2048")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	limits := filepath.Join(sp.Path(spool.DirDB), "limits.json")
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(limits); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("init did not publish its bound")
		}
	}
	if _, err := mschedIn(t, dir, "submit", "job.yaml"); err == nil || !strings.Contains(err.Error(), "over the limit of 2048 bytes") {
		t.Errorf("submit of %d bytes, init's bound 2048, the user's default 1 MiB: %v", len(job), err)
	}
}

// msched submit refuses a component request that no cluster of the hosts
// file can ever hold, and submits one that fits (issue 15).
func TestSubmit_ComponentsAgainstTheHostsFile(t *testing.T) {
	sp, dir := newSubmitSpool(t)
	hosts := filepath.Join(t.TempDir(), "hosts.yaml")
	os.WriteFile(hosts, []byte("- {name: a0, arch: generic, cluster: a}\n- {name: a1, arch: generic, cluster: a}\n"+
		"- {name: b0, arch: generic, cluster: b}\n- {name: c0, arch: generic, cluster: c}\n"), 0o644)
	t.Setenv("MSCHED_HOSTS", hosts)
	os.WriteFile("fits.yaml", []byte("command: [a]\ncomponents: [1, 2, 1]\n"), 0o644)
	os.WriteFile("ordered.yaml", []byte("command: [a]\ncomponents: [1, 2]\nrequest: ordered\n"), 0o644)
	os.WriteFile("four.yaml", []byte("command: [a]\ncomponents: [1, 1, 1, 1]\n"), 0o644)
	os.WriteFile("total.yaml", []byte("command: [a]\ncomponents: [4, 1]\nrequest: total\n"), 0o644)
	for _, tc := range []struct{ file, want string }{
		{"ordered.yaml", `ordered.yaml: components: the hosts file can never hold it: ordered request [1 2]: component 2 needs 2 hosts in cluster "b" (the 2nd), which has 1 hosts`},
		{"four.yaml", "four.yaml: components: the hosts file can never hold it: unordered request [1 1 1 1]: 4 components, each in its own cluster, but only 3 clusters"},
		{"total.yaml", "total request of 5 hosts: only 4 hosts exist"},
	} {
		out, err := mschedIn(t, dir, "submit", "fits.yaml", tc.file)
		if err == nil || !strings.Contains(out, tc.want) || !strings.Contains(err.Error(), "nothing submitted") {
			t.Errorf("submit %s: %v\n%s\nwant %q and nothing submitted", tc.file, err, out, tc.want)
		}
	}
	if fs := submittedFiles(t, sp); len(fs) != 0 {
		t.Fatalf("submitted %q", fs)
	}
	if out, err := mschedIn(t, dir, "submit", "fits.yaml"); err != nil {
		t.Fatalf("submit fits.yaml: %v\n%s", err, out)
	}
	if fs := submittedFiles(t, sp); len(fs) != 1 {
		t.Fatalf("submitted %q, want fits.yaml", fs)
	}
}
