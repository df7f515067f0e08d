package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

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
		{"ordered.yaml", `ordered.yaml: components: the hosts file can never hold it: ordered request [1 2]: component 2 needs 2 hosts in cluster "b" (the 2nd), which has 1 host`},
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

	// Clusters reached in different ways (here, this machine and ssh)
	// cannot share a job, which runs through one launcher: [1, 1] fits in
	// a and b, [1, 1, 1] only across a, b and the ssh cluster d.
	os.WriteFile(hosts, []byte("- {name: a0, arch: generic, cluster: a}\n- {name: b0, arch: generic, cluster: b}\n"+
		"- {name: d0, arch: generic, cluster: d, address: \"ssh://127.0.0.2\"}\n"), 0o644)
	os.WriteFile("three.yaml", []byte("command: [a]\ncomponents: [1, 1, 1]\n"), 0o644)
	os.WriteFile("two.yaml", []byte("command: [a]\ncomponents: [1, 1]\n"), 0o644)
	out, err := mschedIn(t, dir, "submit", "three.yaml")
	if want := "three.yaml: components: the hosts file can never hold it: unordered request [1 1 1]: only clusters reached in different ways (local, ssh) could hold it together, and a job runs through one launcher"; err == nil || !strings.Contains(out, want) {
		t.Errorf("submit three.yaml: %v\n%s\nwant %q", err, out, want)
	}
	if out, err := mschedIn(t, dir, "submit", "two.yaml"); err != nil {
		t.Errorf("submit two.yaml: %v\n%s", err, out)
	}
}

// mschedWith runs msched in this process with stdin as its standard input
// and returns its standard output and standard error apart.
func mschedWith(t *testing.T, dir, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return mschedCtx(ctx, dir, stdin, args...)
}

// mschedCtx is mschedWith in ctx.
func mschedCtx(ctx context.Context, dir, stdin string, args ...string) (stdout, stderr string, err error) {
	root := newRoot()
	var out, errb strings.Builder
	root.SetArgs(append([]string{"--spool", dir}, args...))
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errb)
	err = root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

// startDaemons runs the named daemons in this process on a spool of n
// local hosts until the test ends; it returns the spool and its path.
func startDaemons(t *testing.T, n int, names ...string) (*spool.Spool, string) {
	t.Helper()
	sp, hosts := testSpool(t, n)
	cfg := testConfig(t, sp)
	log, _ := logFile(t, "daemons")
	d := startInProcess(t, cfg, hosts, log, names...)
	t.Cleanup(func() { d.stop(t) })
	t.Chdir(t.TempDir())
	// Init's heartbeat says it is up before submit asks.
	deadline := time.Now().Add(20 * time.Second)
	for daemonState(sp, "init") != spool.HealthUp && slices.Contains(names, "init") {
		if time.Now().After(deadline) {
			t.Fatal("init not up within 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return sp, sp.Root()
}

// msched submit prints the JID init gave each job (an array: its JIDs),
// or with --parsable the JIDs alone, one per line.
func TestSubmit_PrintsTheJID(t *testing.T) {
	sp, dir := startDaemons(t, 2, "init")
	os.WriteFile("a.yaml", []byte("command: [\"true\"]\n"), 0o644)
	os.WriteFile("b.yaml", []byte("command: [\"true\"]\n"), 0o644)
	os.WriteFile("sweep.yaml", []byte("command: [\"true\"]\narray: 1-3%2\n"), 0o644)
	out, errs, err := mschedWith(t, dir, "", "submit", "--jid-wait", "60s", "a.yaml", "b.yaml")
	if err != nil || out != "a.yaml: submitted as J000001\nb.yaml: submitted as J000002\n" {
		t.Errorf("submit a.yaml b.yaml: %v\n%s%s", err, out, errs)
	}
	out, errs, err = mschedWith(t, dir, "", "submit", "--jid-wait", "60s", "--parsable", "a.yaml", "sweep.yaml")
	if err != nil || out != "J000003\nJ000004\nJ000005\nJ000006\n" || errs != "" {
		t.Errorf("submit --parsable a.yaml sweep.yaml: %v\n%q\n%s", err, out, errs)
	}
	out, errs, err = mschedWith(t, dir, "", "submit", "--jid-wait", "60s", "sweep.yaml")
	if want := "sweep.yaml: submitted as J000007, an array of 3 jobs (array: 1-3%2): J000007-J000009\n"; err != nil || out != want {
		t.Errorf("submit sweep.yaml: %v\n%q\n%s\nwant %q", err, out, errs, want)
	}
	// The JIDs are known once init has claimed the files (and reserved an
	// array's); the jobs are queued an instant later.
	for _, jid := range []string{"J000001", "J000006", "J000009"} {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if st, _ := sp.StateOf(jid); st == spool.Queued {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("%s is %q, want queued", jid, st)
			}
		}
	}
}

// With init down, msched submit does not wait: it says where the job waits
// and that its JID comes when init runs; --parsable prints no JID.
func TestSubmit_InitDownSaysSoAndDoesNotWait(t *testing.T) {
	sp, dir := newSubmitSpool(t)
	os.WriteFile("job.yaml", []byte("command: [\"true\"]\n"), 0o644)
	start := time.Now()
	out, errs, err := mschedWith(t, dir, "", "submit", "job.yaml")
	want := "job.yaml: submitted as " + filepath.Join(sp.Dir(spool.Submitted), "job.yaml") +
		", without a JID yet: init is never; the job gets its JID when init runs (msched status lists it)\n"
	if err != nil || out != want {
		t.Errorf("submit with init never started: %v\n%q\n%s\nwant %q", err, out, errs, want)
	}
	out, errs, err = mschedWith(t, dir, "", "submit", "--parsable", "job.yaml")
	if err != nil || out != "" || !strings.Contains(errs, "without a JID yet: init is never") {
		t.Errorf("submit --parsable with init never started: %v\nstdout %q\nstderr %q", err, out, errs)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if fs := submittedFiles(t, sp); len(fs) != 2 {
		t.Errorf("submitted %q", fs)
	}
}

// submit - reads the job file from standard input, bounded as a file is.
func TestSubmit_Stdin(t *testing.T) {
	sp, dir := newSubmitSpool(t)
	out, errs, err := mschedWith(t, dir, "name: piped\ncommand: [\"true\"]\n", "submit", "--jid-wait", "0", "-")
	if err != nil || !strings.HasPrefix(out, "stdin: submitted as ") {
		t.Fatalf("submit -: %v\n%s%s", err, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(sp.Dir(spool.Submitted), "stdin"))
	if err != nil {
		t.Fatal(err)
	}
	cwd, _ := os.Getwd()
	if j, err := spool.ParseSubmission("stdin", b); err != nil || j.Name != "piped" || j.SubmitDir != cwd {
		t.Errorf("submitted %q: %v", b, err)
	}
	t.Setenv("MSCHED_INIT_MAX_JOB_BYTES", "2048")
	_, _, err = mschedWith(t, dir, "command: [a]\n"+strings.Repeat("#", 4096), "submit", "-")
	if err == nil || !strings.Contains(err.Error(), "stdin: too large: over the limit of 2048 bytes") {
		t.Errorf("submit - of 4 KiB over a bound of 2 KiB: %v", err)
	}
	if _, _, err = mschedWith(t, dir, "", "submit", "-", "-"); err == nil || exitCode(err) != exitUsage {
		t.Errorf("submit - -: %v", err)
	}
}

// submit -- CMD ARGS builds the job from its flags, checked as a file is;
// a flag's mistake is told by the flag.
func TestSubmit_CommandLine(t *testing.T) {
	sp, dir := newSubmitSpool(t)
	out, errs, err := mschedWith(t, dir, "", "submit", "--jid-wait", "0", "--name", "sim", "--hosts", "2-4", "--arch", "generic",
		"--walltime", "1:30:00", "--model", "particles", "--param", "N=20000", "--workdir", "run", "--stdout", "o.txt", "--stderr", "e.txt",
		"--env", "A=b=c", "--env", "OMP_NUM_THREADS=4", "--mail", "begin,end", "--notify", "me@example.org",
		"--after", "10,J11", "--afterok", "j000012", "--array", "1-3%2", "--", "./prog", "-n", "5")
	if err != nil || !strings.HasPrefix(out, "sim: submitted as ") {
		t.Fatalf("submit --: %v\n%s%s", err, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(sp.Dir(spool.Submitted), "sim"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := spool.ParseSubmission("sim", b)
	if err != nil {
		t.Fatal(err)
	}
	cwd, _ := os.Getwd()
	want := &spool.Job{Name: "sim", Command: []string{"./prog", "-n", "5"}, Workdir: "run", Notify: "me@example.org",
		Mail: []string{"begin", "end"}, Hosts: &spool.Hosts{Min: 2, Max: 4, Arch: "generic"},
		Model: &spool.Model{Name: "particles", Params: map[string]float64{"N": 20000}}, Walltime: spool.Duration(90 * time.Minute),
		Stdout: "o.txt", Stderr: "e.txt", Env: map[string]string{"A": "b=c", "OMP_NUM_THREADS": "4"}, SubmitDir: cwd,
		Array: "1-3%2", After: []string{"J000010", "J000011"}, AfterOK: []string{"J000012"}}
	if got, _ := j.Marshal(); string(got) != string(mustMarshal(t, want)) {
		t.Errorf("submitted\n%s\nwant\n%s", got, mustMarshal(t, want))
	}
	out, errs, err = mschedWith(t, dir, "", "submit", "--jid-wait", "0", "--hosts", "3", "--components", "", "--launch", "mpi", "--ranks-per-host", "2", "--", "mpiprog")
	if err != nil {
		t.Fatalf("submit --launch mpi: %v\n%s%s", err, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(sp.Dir(spool.Submitted), "mpiprog")); err != nil || !strings.Contains(string(b), "hosts:\n    count: 3\n") || !strings.Contains(string(b), "ranks_per_host: 2") {
		t.Errorf("submitted %s, %v", b, err)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--walltime", "soon", "--", "x"}, exitUsage, `--walltime: "soon" is not a duration`},
		{[]string{"--hosts", "0", "--", "x"}, exitUsage, `--hosts "0": want a number of hosts`},
		{[]string{"--param", "N=1", "--", "x"}, exitUsage, "--param is a parameter of a model: give --model too"},
		{[]string{"--after", "J1x", "--", "x"}, exitUsage, `--after: "J1x" is not a job id`},
		{[]string{"--array", "5-1", "--", "x"}, exitUsage, `--array: "5-1" is not a range`},
		{[]string{"--env", "1X=y", "--", "x"}, exitRefused, "--env (env.1X): not a variable name"},
		{[]string{"--mail", "never", "--", "x"}, exitRefused, `--mail (mail[0]): unknown "never"`},
		{[]string{"--launch", "pvm", "--", "x"}, exitRefused, `--launch: unknown launch "pvm"`},
		{[]string{"--request", "total", "--", "x"}, exitRefused, "--request: only with components"},
		{[]string{"--", ""}, exitRefused, "the command after -- (command[0]): the program name is empty"},
		{[]string{"--walltime", "1h", "job.yaml"}, exitUsage, "--walltime describes a job given after --; a job file says it itself (walltime:)"},
		{[]string{"job.yaml", "--", "x"}, exitUsage, "give job files or a command after --, not both"},
		{[]string{"--"}, exitUsage, "nothing after --"},
		{nil, exitUsage, "give a job file, - for a job file on standard input, or a command after --"},
	} {
		out, errs, err := mschedWith(t, dir, "", append([]string{"submit", "--jid-wait", "0"}, tc.args...)...)
		if err == nil || exitCode(err) != tc.code || !strings.Contains(err.Error()+errs, tc.want) {
			t.Errorf("submit %q: exit %d, %v\n%s%s\nwant exit %d and %q", tc.args, exitCode(err), err, out, errs, tc.code, tc.want)
		}
	}
	if fs := submittedFiles(t, sp); len(fs) != 2 {
		t.Errorf("submitted %q, want sim and mpiprog only", fs)
	}
}

func mustMarshal(t *testing.T, j *spool.Job) []byte {
	t.Helper()
	b, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// --after, --afterok and --array add to a job file what it does not say
// itself; a file that says it is refused, with the flag named.
func TestSubmit_FlagsIntoAJobFile(t *testing.T) {
	sp, dir := newSubmitSpool(t)
	os.WriteFile("job.yaml", []byte("# mine\ncommand: [\"true\"]\n"), 0o644)
	os.WriteFile("arr.yaml", []byte("command: [\"true\"]\narray: 1-2\n"), 0o644)
	if out, errs, err := mschedWith(t, dir, "", "submit", "--jid-wait", "0", "--afterok", "3", "--array", "1-4", "job.yaml"); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errs)
	}
	b, _ := os.ReadFile(filepath.Join(sp.Dir(spool.Submitted), "job.yaml"))
	j, err := spool.ParseSubmission("job.yaml", b)
	if err != nil || !strings.HasPrefix(string(b), "# mine\n") || j.Array != "1-4" || len(j.AfterOK) != 1 || j.AfterOK[0] != "J000003" {
		t.Errorf("submitted %q: %v", b, err)
	}
	if _, errs, err := mschedWith(t, dir, "", "submit", "--array", "1-4", "arr.yaml"); err == nil || exitCode(err) != exitUsage ||
		!strings.Contains(err.Error(), "arr.yaml: the job file sets array: itself; give it there or as --array, not both") {
		t.Errorf("--array with a file that sets array: %v\n%s", err, errs)
	}
}

// --help explains every flag, with examples.
func TestSubmit_HelpExplainsEveryFlag(t *testing.T) {
	_, dir := newSubmitSpool(t)
	out, _, err := mschedWith(t, dir, "", "submit", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"--parsable", "--wait", "--jid-wait", "--name", "--hosts", "--arch", "--cluster", "--walltime", "--model",
		"--param", "--workdir", "--stdout", "--stderr", "--env", "--mail", "--notify", "--components", "--request", "--launch",
		"--ranks-per-host", "--after", "--afterok", "--array", "Examples:", "msched submit --array 1-100%10", "2-00:00:00"} {
		if !strings.Contains(out, f) {
			t.Errorf("submit --help does not mention %s", f)
		}
	}
	newSubmitCmd(viper.New()).Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Usage == "" || !strings.Contains(out, "--"+fl.Name) {
			t.Errorf("--%s is not explained", fl.Name)
		}
	})
}

// submit --wait exits with the job's exit status: 128+N for signal N, 4
// (and the reason) for a job rejected; with several jobs, the first
// non-zero in the order submitted. Ctrl-C stops the waiting, not the job.
func TestSubmit_WaitExitsWithTheJobsStatus(t *testing.T) {
	sp, dir := startDaemons(t, 4, daemonNames...)
	sh := func(script string) []string {
		return []string{"submit", "--jid-wait", "60s", "--wait", "--", "/bin/sh", "-c", script}
	}
	out, errs, err := mschedWith(t, dir, "", sh("exit 0")...)
	if err != nil || out != "sh: submitted as J000001\nJ000001: exited with status 0\n" {
		t.Errorf("exit 0: %v\n%q\n%s", err, out, errs)
	}
	_, _, err = mschedWith(t, dir, "", sh("exit 3")...)
	if exitCode(err) != 3 || err.Error() != "J000002 exited with status 3" {
		t.Errorf("exit 3: exit %d, %v", exitCode(err), err)
	}
	_, _, err = mschedWith(t, dir, "", sh("kill -9 $$")...)
	if exitCode(err) != 128+9 || !strings.Contains(err.Error(), "killed by SIGKILL") {
		t.Errorf("killed by SIGKILL: exit %d, %v", exitCode(err), err)
	}
	out, _, err = mschedWith(t, dir, "", "submit", "--jid-wait", "60s", "--wait", "--afterok", "2", "--", "true")
	if exitCode(err) != exitRefused || !strings.Contains(err.Error(), "J000004 rejected: afterok: J000002 exited with status 3; it had to exit with status 0") {
		t.Errorf("afterok a failed job: exit %d, %v\n%s", exitCode(err), err, out)
	}
	// Several: the first non-zero in the order submitted, though it ends last.
	os.WriteFile("slow.yaml", []byte("command: [/bin/sh, -c, \"sleep 0.5; exit 6\"]\n"), 0o644)
	os.WriteFile("fast.yaml", []byte("command: [/bin/sh, -c, \"exit 5\"]\n"), 0o644)
	out, errs, err = mschedWith(t, dir, "", "submit", "--jid-wait", "60s", "--wait", "--parsable", "slow.yaml", "fast.yaml")
	if exitCode(err) != 6 || out != "J000005\nJ000006\n" || !strings.Contains(errs, "J000006: exited with status 5") {
		t.Errorf("two jobs: exit %d, %v\n%q\n%s", exitCode(err), err, out, errs)
	}
	// Ctrl-C, once the job runs (so that it has its JID, whatever init's
	// pace; bounded: the command ends in 30 s anyway).
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if st, _ := sp.StateOf("J000007"); st == spool.Running {
				return
			}
		}
	}()
	_, errs, err = mschedCtx(ctx, dir, "", "submit", "--jid-wait", "60s", "--wait", "--", "sleep", "30")
	if exitCode(err) != 130 || !strings.Contains(err.Error(), "stopped waiting for J000007; the jobs go on") {
		t.Errorf("Ctrl-C: exit %d, %v\n%s%s", exitCode(err), err, errs, spoolDump(sp, "J000007"))
	}
	if st, _ := sp.StateOf("J000007"); st != spool.Running && st != spool.Runnable && st != spool.Queued {
		t.Errorf("the job is %q after the waiting stopped", st)
	}
	sp.RequestCancel("J000007")
	// A job's status 2 is no usage error of msched's: no usage line.
	root := newRoot()
	var errb strings.Builder
	root.SetArgs(append([]string{"--spool", dir}, sh("exit 2")...))
	root.SetOut(io.Discard)
	root.SetErr(&errb)
	if code := execute(context.Background(), root); code != 2 || strings.Contains(errb.String(), "usage:") {
		t.Errorf("exit 2: msched exited %d\n%s", code, errb.String())
	}
}

// An array through msched: each member sees its index and the array's JID.
func TestSubmit_ArrayRuns(t *testing.T) {
	sp, dir := startDaemons(t, 4, daemonNames...)
	out, errs, err := mschedWith(t, dir, "", "submit", "--wait", "--parsable", "--array", "2,4-5%2", "--",
		"/bin/sh", "-c", "echo $MSCHED_ARRAY_JOB_ID $MSCHED_ARRAY_INDEX")
	if err != nil || out != "J000001\nJ000002\nJ000003\n" {
		t.Fatalf("%v\n%q\n%s", err, out, errs)
	}
	for jid, want := range map[string]string{"J000001": "J000001 2\n", "J000002": "J000001 4\n", "J000003": "J000001 5\n"} {
		b, err := os.ReadFile(filepath.Join(sp.Path(spool.DirOutput), jid, "stdout"))
		if err != nil || string(b) != want {
			t.Errorf("%s printed %q, %v; want %q", jid, b, err, want)
		}
	}
}

// A job submitted --afterok another waits for it, says so, and runs once
// it has exited 0.
func TestSubmit_DependencyWaits(t *testing.T) {
	sp, dir := startDaemons(t, 4, daemonNames...)
	gate := filepath.Join(t.TempDir(), "gate")
	first, _, err := mschedWith(t, dir, "", "submit", "--parsable", "--", "/bin/sh", "-c", "while [ ! -e "+gate+" ]; do sleep 0.05; done")
	if err != nil || first != "J000001\n" {
		t.Fatalf("%v %q", err, first)
	}
	second, _, err := mschedWith(t, dir, "", "submit", "--parsable", "--afterok", "J1", "--", "true")
	if err != nil || second != "J000002\n" {
		t.Fatalf("%v %q", err, second)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, _ := sp.ReadSchedule()
		_, j, err := sp.Find("J000002")
		if err == nil && p.HeldReason(j) == "waiting for J000001" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("J000002 not said to wait for J000001: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, _ := sp.StateOf("J000002"); st != spool.Queued {
		t.Fatalf("J000002 is %s while J000001 runs", st)
	}
	os.WriteFile(gate, nil, 0o644)
	if out, errs, err := mschedWith(t, dir, "", "submit", "--wait", "--after", "2", "--", "true"); err != nil {
		t.Errorf("%v\n%s%s", err, out, errs)
	}
	// --wait returns once the job is in finished/ (its outcome is known),
	// which may be before the reaper has written the records.
	if r := waitRecords(t, sp, 3, 30*time.Second); len(r) != 3 {
		t.Errorf("%d records", len(r))
	}
}

// A job init rejected before submit reports it (a refusal submit's own
// checks cannot see) is said to be, with init's reason, and is exit 4.
func TestSubmit_ReportsInitsRejection(t *testing.T) {
	sp, _ := newSubmitSpool(t)
	in := sp.As(spool.Init)
	name, err := sp.Submit("job.yaml", []byte("command: [\"true\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := in.Claim(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Move(c.Rejection("submitted by bob, but these daemons run as alice"), spool.Submitted, spool.Rejected, "test"); err != nil {
		t.Fatal(err)
	}
	cmd := newSubmitCmd(viper.New())
	var out strings.Builder
	cmd.SetOut(&out)
	s := &submission{label: "job.yaml", members: 1, claim: &spool.TicketClaim{JID: c.JID}}
	err = reportSubmitted(context.Background(), cmd, sp, false, []*submission{s}, spool.HealthUp, time.Second)
	if exitCode(err) != exitRefused || out.String() != "job.yaml: submitted as J000001, and rejected by init: submitted by bob, but these daemons run as alice\n" {
		t.Errorf("exit %d, %v\n%q", exitCode(err), err, out.String())
	}
}
