package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"msched/examples/testbed"
)

// TestSlurmOwner_Check reads scontrol's answers: only this job of this
// user, with msched's comment for this JID, passes, whatever the words of
// the job's name or directory look like.
func TestSlurmOwner_Check(t *testing.T) {
	o := slurmOwner{UID: 1001, JID: "J7"}
	const rest = " GroupId=alice(1001) MCS_label=N/A Priority=1 JobState=PENDING Reason=JobHeldUser ExitCode=0:0 WorkDir=/home/alice/my dir"
	for _, tc := range []struct {
		name, id, line string
		ok             bool
	}{
		{"ours", "42", "JobId=42 JobName=sim UserId=alice(1001)" + rest + " Comment=msched J7 StdErr=/dev/null", true},
		{"ours, comment last", "42", "JobId=42 JobName=sim UserId=alice(1001)" + rest + " Comment=msched J7", true},
		{"ours, user without a name", "42", "JobId=42 JobName=sim UserId=(null)(1001)" + rest + " Comment=msched J7", true},
		{"another user's", "42", "JobId=42 JobName=sim UserId=bob(1002)" + rest + " Comment=msched J7", false},
		{"another user's, named like ours", "42", "JobId=42 JobName=x UserId=alice(1001) GroupId=x UserId=bob(1002)" + rest + " Comment=msched J7", false},
		// The fake right before the real one: a pattern that consumed the
		// space between them once saw only the fake.
		{"another user's, named like ours, adjacent", "42", "JobId=42 JobName=x Comment=msched J7 UserId=alice(1001) UserId=bob(1002)" + rest + " Comment=(null)", false},
		{"another user's, named like ours, comment adjacent", "42", "JobId=42 JobName=x UserId=alice(1001) UserId=bob(1002)" + rest + " Comment=msched J7", false},
		{"ours, a name holding another comment", "42", "JobId=42 JobName=x Comment=y UserId=alice(1001)" + rest + " Comment=msched J7", false},
		{"ours, a name holding a broken owner", "42", "JobId=42 JobName=x UserId=zz UserId=alice(1001)" + rest + " Comment=msched J7", false},
		{"another msched job", "42", "JobId=42 JobName=sim UserId=alice(1001)" + rest + " Comment=msched J70", false},
		{"no comment", "42", "JobId=42 JobName=sim UserId=alice(1001)" + rest + " Comment=(null)", false},
		{"no owner", "42", "JobId=42 JobName=sim" + rest + " Comment=msched J7", false},
		{"another id", "42", "JobId=420 JobName=sim UserId=alice(1001)" + rest + " Comment=msched J7", false},
		{"an array task", "42", "JobId=43 ArrayJobId=42 ArrayTaskId=1 JobName=sim UserId=alice(1001)" + rest + " Comment=msched J7", false},
		{"a heterogeneous job", "42", "JobId=42 HetJobId=42 HetJobOffset=0 JobName=sim UserId=alice(1001)" + rest + " Comment=msched J7", false},
		{"two jobs", "42", "JobId=42 JobName=sim UserId=alice(1001)" + rest + " Comment=msched J7\nJobId=42 JobName=sim UserId=alice(1001)" + rest + " Comment=msched J7", false},
		{"an error", "42", "slurm_load_jobs error: Invalid job id specified", false},
	} {
		err := o.check(tc.id, []byte(tc.line+"\n"))
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, errNotThisJob)) {
			t.Errorf("%s: %v", tc.name, err)
		}
		// The error never quotes the line: its words are others' choice
		// (a name "Invalid job id" would otherwise read as a purged job).
		if err != nil && strings.Contains(tc.line, "JobName=") && strings.Contains(err.Error(), "JobName=") {
			t.Errorf("%s: the error quotes Slurm's line: %v", tc.name, err)
		}
	}
	for _, id := range []string{"", "+42", "042", "-1", "42_1", "42+0", "42 43"} {
		if err := checkSlurmJob(context.Background(), &Slurm{BinDir: "/nonexistent"}, id, o); !errors.Is(err, errNotThisJob) {
			t.Errorf("id %q: %v, want it refused before scontrol runs", id, err)
		}
	}
}

// TestSlurmScript_RestoresWhatSlurmDropped: the batch script gives the job
// a variable of its environment that Slurm did not carry (sbatch drops
// DISPLAY from an --export-file) and leaves one that Slurm set alone.
func TestSlurmScript_RestoresWhatSlurmDropped(t *testing.T) {
	spec := Spec{JID: "J000001", Hosts: []string{"c1n1"}, Env: []string{"DISPLAY=:9", "HOSTNAME=mine", "X=a b\nc'd $(id)"},
		Argv: []string{"sh", "-c", `printf '%s|%s|%s' "$DISPLAY" "$HOSTNAME" "$X"`}}
	cmd := exec.Command("sh", "-s")
	cmd.Env = []string{"PATH=" + DefaultPath, "HOSTNAME=c1n1"} // as slurmd starts the script
	cmd.Stdin = strings.NewReader(slurmScript(spec))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, want := string(out), ":9|c1n1|a b\nc'd $(id)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// fakeSlurm is a Slurm of shell scripts in a directory every user can
// reach, each logging its uid and arguments to calls.log. sbatch saves its
// own environment (sbatch.environ), the job's that it was given on
// --export-file's descriptor (job.env) and its batch script (script), and
// prints sbatch.out. `scontrol show job ID` prints job.ID, or fails as
// Slurm does for an unknown id; `scontrol release` completes the job and
// scancel cancels it (in job.ID).
type fakeSlurm struct {
	t   *testing.T
	dir string
}

func newFakeSlurm(t *testing.T) *fakeSlurm {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "msched-fake-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	f := &fakeSlurm{t: t, dir: dir}
	for _, name := range []string{"calls.log", "sbatch.environ", "job.env", "script", "sbatch.out"} {
		f.write(name, "", 0o666)
	}
	log := `echo "uid=$(id -u) $(basename "$0") $*" >> ` + dir + "/calls.log\n"
	f.write("sbatch", "#!/bin/sh\n"+log+
		"tr '\\0' '\\n' < /proc/$$/environ > "+dir+"/sbatch.environ\n"+
		"cat <&3 > "+dir+"/job.env\n"+
		"cat > "+dir+"/script\n"+
		"cat "+dir+"/sbatch.out\n", 0o755)
	f.write("scontrol", "#!/bin/sh\n"+log+`case "$1" in
show)
	[ -f `+dir+`/job."$4" ] || { echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1; }
	cat `+dir+`/job."$4" ;;
release)
	sed -i 's/JobState=[A-Z]*/JobState=COMPLETED/' `+dir+`/job."$2" ;;
esac
`, 0o755)
	f.write("scancel", "#!/bin/sh\n"+log+"sed -i 's/JobState=[A-Z]*/JobState=CANCELLED/' "+dir+"/job.\"$1\"\n", 0o755)
	return f
}

func (f *fakeSlurm) write(name, body string, mode os.FileMode) string {
	f.t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		f.t.Fatal(err)
	}
	os.Chmod(p, mode)
	return p
}

func (f *fakeSlurm) read(name string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// job makes id a held job of uid with msched's comment for jid.
func (f *fakeSlurm) job(id string, uid int, jid string) {
	f.write("job."+id, fmt.Sprintf("JobId=%s JobName=%s UserId=u(%d) GroupId=g(%d) MCS_label=N/A JobState=PENDING Reason=JobHeldUser ExitCode=0:0 NodeList=(null) Comment=msched %s StdErr=/dev/null\n",
		id, jid, uid, uid, jid), 0o644)
}

func (f *fakeSlurm) slurm() *Slurm { return &Slurm{Conf: "/dev/null", Nodes: 1, BinDir: f.dir} }

// spec is a job of id (nil: the test's own user) for the fake cluster.
func (f *fakeSlurm) spec(t *testing.T, id *Identity) Spec {
	spec := newSpec(t, "true")
	spec.Identity = id
	spec.Dir, spec.Stdout, spec.Stderr = "", "", ""
	spec.Slurm = f.slurm()
	return spec
}

// calls is the log of every call of the fake Slurm's commands.
func (f *fakeSlurm) calls() string { return f.read("calls.log") }

// TestSlurm_SbatchGetsNoJobEnvironment: sbatch, run as the user, gets an
// environment of the shepherd's making and nothing of the job's env: (here
// LD_PRELOAD and LD_LIBRARY_PATH, which would run the user's code inside
// sbatch); the job's whole environment goes to sbatch on the
// --export-file descriptor instead.
func TestSlurm_SbatchGetsNoJobEnvironment(t *testing.T) {
	id := testUser(t)
	f := newFakeSlurm(t)
	f.write("sbatch.out", "100\n", 0o644)
	f.job("100", id.UID, "j1")
	spec := f.spec(t, id)
	spec.Path = "/usr/bin:/bin"
	spec.Env = []string{"LD_PRELOAD=/nonexistent/lib.so", "LD_LIBRARY_PATH=/nonexistent", "HOME=/elsewhere", "X=a b\nc", "SBATCH_WAIT=1"}
	var rec PidFile
	res := runSlurm(context.Background(), spec, make(chan os.Signal), func(p PidFile) { rec = p })
	if !res.OK() || rec.SlurmJob != "100" || rec.SlurmUID != id.UID || rec.SlurmJID != "j1" {
		t.Fatalf("result %+v, record %+v\ncalls:\n%s", res, rec, f.calls())
	}
	got := strings.Fields(f.read("sbatch.environ"))
	slices.Sort(got)
	want := []string{"HOME=" + id.Home, "LOGNAME=" + id.User, "PATH=/usr/bin:/bin", "SLURM_CONF=/dev/null", "USER=" + id.User}
	if !slices.Equal(got, want) {
		t.Errorf("sbatch's environment %q, want %q", got, want)
	}
	jobEnv := strings.Split(strings.TrimSuffix(f.read("job.env"), "\x00"), "\x00")
	if want := slurmJobEnv(spec); !slices.Equal(jobEnv, want) {
		t.Errorf("job's environment on the descriptor %q, want %q", jobEnv, want)
	}
	for _, e := range []string{"LD_PRELOAD=/nonexistent/lib.so", "LD_LIBRARY_PATH=/nonexistent", "HOME=/elsewhere", "X=a b\nc", "MSCHED_JID=j1"} {
		if !slices.Contains(jobEnv, e) {
			t.Errorf("the job's environment lacks %q: %q", e, jobEnv)
		}
	}
	if !strings.Contains(f.read("script"), "export 'SBATCH_WAIT=1'") {
		t.Errorf("the batch script does not export SBATCH_WAIT:\n%s", f.read("script"))
	}
}

// TestSlurm_LDPreloadCannotChooseTheJobID is the attack on the id: a job
// whose env: preloads a library into sbatch that prints another user's
// Slurm job id (999). The library must not reach sbatch, and root must
// release and follow only the job sbatch submitted (100).
func TestSlurm_LDPreloadCannotChooseTheJobID(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("needs gcc")
	}
	id := testUser(t)
	f := newFakeSlurm(t)
	src := f.write("evil.c", "#include <unistd.h>\n__attribute__((constructor)) static void f(void){write(1,\"999\\n\",4);_exit(0);}\n", 0o644)
	evil := filepath.Join(f.dir, "evil.so")
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", evil, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	os.Chmod(evil, 0o755)
	f.write("sbatch.out", "100\n", 0o644)
	f.job("100", id.UID, "j1")
	f.job("999", id.UID+1, "j9") // another user's
	spec := f.spec(t, id)
	spec.Env = []string{"LD_PRELOAD=" + evil}
	var rec PidFile
	res := runSlurm(context.Background(), spec, make(chan os.Signal), func(p PidFile) { rec = p })
	calls := f.calls()
	if rec.SlurmJob != "100" || strings.Contains(calls, " 999") || !res.OK() {
		t.Fatalf("result %+v, Slurm job recorded %q (sbatch's is 100); calls:\n%s", res, rec.SlurmJob, calls)
	}
	if !strings.Contains(calls, "uid=0 scontrol release 100\n") {
		t.Fatalf("job 100 not released by the shepherd; calls:\n%s", calls)
	}
}

// TestSlurm_ForeignJobIDNotTouched: whatever made sbatch print it (a
// ptrace of the user's, a wrapper), an id that Slurm does not show as this
// job of this user is never released or cancelled, and the job does not
// start, saying why.
func TestSlurm_ForeignJobIDNotTouched(t *testing.T) {
	uid := os.Geteuid() // the job runs as the test's user
	for _, tc := range []struct {
		name, printed string
		job           func(f *fakeSlurm)
		reason        string
	}{
		{"another user's job", "999", func(f *fakeSlurm) { f.job("999", uid+1, "j1") }, "belongs to uid"},
		{"another msched job of the user", "999", func(f *fakeSlurm) { f.job("999", uid, "j2") }, "not msched's job j1"},
		{"no such job", "999", func(f *fakeSlurm) {}, "Invalid job id"},
		{"not a plain id", "0999", func(f *fakeSlurm) { f.job("999", uid+1, "j1") }, "not a job id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSlurm(t)
			f.write("sbatch.out", tc.printed+"\n", 0o644)
			tc.job(f)
			called := false
			res := runSlurm(context.Background(), f.spec(t, nil), make(chan os.Signal), func(PidFile) { called = true })
			calls := f.calls()
			if !res.StartError || !strings.Contains(res.Reason, tc.reason) || called {
				t.Errorf("result %+v (started called: %v), want a start error with %q", res, called, tc.reason)
			}
			if strings.Contains(calls, "release") || strings.Contains(calls, "scancel") {
				t.Errorf("root acted on Slurm job %s:\n%s", tc.printed, calls)
			}
		})
	}
}

// TestSlurm_AdoptChecksTheRecordedJob: a pid file left without a shepherd
// names a Slurm job; Adopt cancels it only if Slurm still shows it as the
// recorded user's and msched's job. Otherwise it cancels nothing and, but
// for a job Slurm no longer knows, reports an error, so that the daemon
// neither cancels nor re-queues.
func TestSlurm_AdoptChecksTheRecordedJob(t *testing.T) {
	for _, tc := range []struct {
		name      string
		job       func(f *fakeSlurm)
		rec       PidFile
		gone      bool // Adopt says Gone; else an error
		cancelled bool
	}{
		{"ours", func(f *fakeSlurm) { f.job("100", 1001, "j1") }, PidFile{SlurmJob: "100", SlurmUID: 1001, SlurmJID: "j1"}, true, true},
		{"another user's", func(f *fakeSlurm) { f.job("100", 1002, "j1") }, PidFile{SlurmJob: "100", SlurmUID: 1001, SlurmJID: "j1"}, false, false},
		{"another msched job", func(f *fakeSlurm) { f.job("100", 1001, "j2") }, PidFile{SlurmJob: "100", SlurmUID: 1001, SlurmJID: "j1"}, false, false},
		{"purged", func(f *fakeSlurm) {}, PidFile{SlurmJob: "100", SlurmUID: 1001, SlurmJID: "j1"}, true, false},
		{"record without its owner", func(f *fakeSlurm) { f.job("100", 1001, "j1") }, PidFile{SlurmJob: "100"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSlurm(t)
			tc.job(f)
			rec := tc.rec
			rec.BootID, rec.Shepherd, rec.ShepherdStart = "a-boot-before-the-crash", 1, 1
			rec.SlurmConf, rec.SlurmBin = "/dev/null", f.dir
			data, _ := json.Marshal(rec)
			dir := t.TempDir()
			pid, res := filepath.Join(dir, "j.pid"), filepath.Join(dir, "j.result")
			if err := os.WriteFile(pid, append(data, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			a, err := Adopt(pid, res)
			calls := f.calls()
			if tc.gone != (err == nil && a.State == Gone) {
				t.Errorf("Adopt: %v %v, want gone: %v", a.State, err, tc.gone)
			}
			if cancelled := strings.Contains(calls, "scancel"); cancelled != tc.cancelled {
				t.Errorf("cancelled: %v, want %v; calls:\n%s", cancelled, tc.cancelled, calls)
			}
		})
	}
}

// TestSlurm_JobEnvironmentAsBefore: on a real cluster, the job's
// environment through --export-file is what it was when sbatch ran with
// the job's environment as its own (which this test still does, as the
// user, for comparison): Slurm's own variables where Slurm set them
// (HOSTNAME), the job's where it gave them (TMPDIR, DISPLAY, a value over
// lines), SLURM_* of the job's from the batch script.
func TestSlurm_JobEnvironmentAsBefore(t *testing.T) {
	bed := testbed.Start(t)
	spec := slurmSpec(t, bed, "sh", "-c", "env -0")
	spec.Env = []string{"DISPLAY=:9", "TMPDIR=" + spec.Dir, "HOSTNAME=mine", "ENVIRONMENT=mine", "X=a b\nc'd $(id)",
		"HOME=/elsewhere", "SLURM_JOB_NAME=mine", "SBATCH_PARTITION=msched-no-such-partition"}
	spec.Stderr = ""

	// As before: sbatch with the job's environment, the batch script on stdin.
	before := spec
	before.Stdout = filepath.Join(spec.Dir, "before")
	args := slices.DeleteFunc(sbatchArgs(before), func(a string) bool { return a == "--hold" })
	out, err := slurmOutput(context.Background(), spec.Slurm, credential(spec.Identity), slurmJobEnv(before), slurmScript(before), "sbatch", args...)
	if err != nil {
		t.Fatal(err)
	}
	beforeID := strings.TrimSpace(string(out))
	deadline := time.Now().Add(waitBound)
	for !scontrolJob(t, spec.Slurm, beforeID).final() {
		if time.Now().After(deadline) {
			t.Fatalf("Slurm job %s not done", beforeID)
		}
		time.Sleep(200 * time.Millisecond)
	}

	spec.Stdout = filepath.Join(spec.Dir, "now")
	if res := runSlurm(context.Background(), spec, make(chan os.Signal), func(PidFile) {}); !res.OK() {
		t.Fatalf("result %+v", res)
	}
	envOf := func(path string) map[string]string {
		m := map[string]string{}
		for _, e := range strings.Split(readFile(t, path), "\x00") {
			if k, v, ok := strings.Cut(e, "="); ok {
				switch k {
				case "SLURM_JOB_ID", "SLURM_JOBID", "SLURM_TASK_PID", "MSCHED_HOSTFILE": // this job's own
				default:
					m[k] = v
				}
			}
		}
		return m
	}
	was, is := envOf(before.Stdout), envOf(spec.Stdout)
	for k, v := range was {
		if is[k] != v {
			t.Errorf("%s=%q, was %q", k, is[k], v)
		}
	}
	for k, v := range is {
		if _, ok := was[k]; !ok {
			t.Errorf("%s=%q, was unset", k, v)
		}
	}
	for k, v := range map[string]string{"DISPLAY": ":9", "TMPDIR": spec.Dir, "HOSTNAME": "c1n1", "X": "a b\nc'd $(id)",
		"HOME": "/elsewhere", "SLURM_JOB_NAME": "mine", "SBATCH_PARTITION": "msched-no-such-partition"} {
		if is[k] != v {
			t.Errorf("%s=%q, want %q", k, is[k], v)
		}
	}
	if t.Failed() {
		t.Logf("before:\n%s\nnow:\n%s", bytes.ReplaceAll([]byte(readFile(t, before.Stdout)), []byte{0}, []byte{'\n'}),
			bytes.ReplaceAll([]byte(readFile(t, spec.Stdout)), []byte{0}, []byte{'\n'}))
	}
}
