package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"msched/examples/testbed"
)

func TestParseSlurmJob(t *testing.T) {
	line := `JobId=7 JobName=x y UserId=alice(1001) GroupId=alice(1001) MCS_label=N/A Priority=1 Nice=0 Account=(null) QOS=(null) JobState=COMPLETED Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=3:0 RunTime=00:00:01 TimeLimit=UNLIMITED NodeList=c1n1 BatchHost=c1n1 Command=(null) WorkDir=/home/alice/my dir`
	j, err := parseSlurmJob([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if j.State != "COMPLETED" || j.Exit != 3 || j.Signal != 0 || j.Reason != "None" || j.NodeList != "c1n1" || !j.final() {
		t.Fatalf("got %+v", j)
	}
	r := slurmResult(Result{}, j, "7", "")
	if r.ExitStatus != 3 || r.Reason != "exit status 3" || r.OK() {
		t.Fatalf("result %+v", r)
	}
	for _, tc := range []struct {
		line       string
		final      bool
		exit       int
		signal     string
		reasonPart string
	}{
		{"JobState=RUNNING Reason=None ExitCode=0:0", false, 0, "", ""},
		{"JobState=PENDING Reason=JobHeldUser ExitCode=0:0", false, 0, "", ""},
		{"JobState=COMPLETED Reason=None ExitCode=0:0", true, 0, "", ""},
		{"JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0", true, 1, "", "exit status 1"},
		{"JobState=CANCELLED Reason=None ExitCode=0:15", true, -1, "SIGTERM", "cancelled in Slurm"},
		{"JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15", true, -1, "SIGTERM", "walltime exceeded"},
		{"JobState=NODE_FAIL Reason=NodeDown ExitCode=0:0", true, -1, "", "NODE_FAIL"},
	} {
		j, err := parseSlurmJob([]byte(tc.line))
		if err != nil || j.final() != tc.final {
			t.Errorf("%s: %+v %v", tc.line, j, err)
			continue
		}
		if !tc.final {
			continue
		}
		r := slurmResult(Result{}, j, "7", "")
		if r.ExitStatus != tc.exit || r.Signal != tc.signal || !strings.Contains(r.Reason, tc.reasonPart) || (tc.reasonPart == "") != r.OK() {
			t.Errorf("%s: result %+v", tc.line, r)
		}
	}
	if _, err := parseSlurmJob([]byte("slurm_load_jobs error: Invalid job id specified")); err == nil {
		t.Error("an error line parsed")
	}
}

// TestSlurmScript runs the batch script with sh, as slurmd would, on words
// that a shell would otherwise split, expand or execute.
func TestSlurmScript(t *testing.T) {
	dir := t.TempDir()
	wd := filepath.Join(dir, "work dir $HOME")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := Spec{JID: "J000001", Hosts: []string{"c1n1", "c1n2"}, Dir: wd,
		Argv: []string{"sh", "-c", `pwd; printf '[%s]\n' "$@"; cat "$MSCHED_HOSTFILE"; exit 4`, "x", "a b", "'q'", "$(id)", "`x`;*"}}
	cmd := exec.Command("sh", "-s")
	cmd.Stdin = strings.NewReader(slurmScript(spec))
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Fatalf("exit: %v\n%s", err, out)
	}
	want := wd + "\n[a b]\n['q']\n[$(id)]\n[`x`;*]\nc1n1\nc1n2\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

func TestSbatchArgs(t *testing.T) {
	spec := Spec{JID: "J000009", Stdout: "/o/100%.out", Stderr: "/o/100%.out", Dir: "/w", Walltime: 61 * time.Second,
		Slurm: &Slurm{Conf: "/c.conf", Partition: "debug", Nodes: 2, JobName: "sim"}}
	got := strings.Join(sbatchArgs(spec), " ")
	want := `--parsable --hold --nodes=2 --job-name=sim --comment=msched J000009 --partition=debug --time=2 --output=\/o/100%.out --chdir=/w`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	spec.Stderr, spec.Walltime, spec.Slurm.JobName, spec.Slurm.Partition = "", 0, "", ""
	got = strings.Join(sbatchArgs(spec), " ")
	want = `--parsable --hold --nodes=2 --job-name=J000009 --comment=msched J000009 --output=\/o/100%.out --error=/dev/null --chdir=/w`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// slurmSpec is a Slurm job of a new test user on the bed's cluster c1.
func slurmSpec(t *testing.T, bed *testbed.Bed, argv ...string) Spec {
	t.Helper()
	spec := userSpec(t, testUser(t), argv...)
	spec.Hosts = []string{"c1n1"}
	spec.Slurm = &Slurm{Conf: bed.SlurmConf["c1"], Nodes: 1, JobName: "test"}
	return spec
}

// startSlurm starts spec through a real shepherd and returns its handle
// and its start notice, which must name the Slurm job (bounded wait).
func startSlurm(t *testing.T, spec Spec) (Handle, PidFile) {
	t.Helper()
	h, err := testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	var rec PidFile
	select {
	case rec = <-h.(StartNotifier).Started():
	case <-time.After(waitBound):
		t.Fatal("no start notice")
	}
	if _, err := strconv.Atoi(rec.SlurmJob); err != nil || rec.SlurmConf != spec.Slurm.Conf {
		t.Fatalf("start notice %+v: no Slurm job id", rec)
	}
	return h, rec
}

// TestSlurm_RunsAsUserWithResult submits through a real shepherd: the job
// runs as its user with the job's environment, its exit status comes back,
// its Slurm id is in the ready notice and the pid file before it ends.
func TestSlurm_RunsAsUserWithResult(t *testing.T) {
	bed := testbed.Start(t)
	spec := slurmSpec(t, bed, "sh", "-c", `echo "user=$(id -un) slurm=$SLURM_JOB_ID jid=$MSCHED_JID x=$X"; cat "$MSCHED_HOSTFILE"; exit 3`)
	spec.Env = []string{"X=a b"}
	h, rec := startSlurm(t, spec)
	if onDisk, err := ReadPidFile(spec.PidPath); err != nil || onDisk.SlurmJob != rec.SlurmJob {
		t.Fatalf("pid file %+v %v, want slurm job %s", onDisk, err, rec.SlurmJob)
	}
	res := wait(t, h)
	if res.ExitStatus != 3 || res.Reason != "exit status 3" || res.StartError {
		t.Fatalf("result %+v", res)
	}
	want := fmt.Sprintf("user=%s slurm=%s jid=j1 x=a b\nc1n1\n", spec.Identity.User, rec.SlurmJob)
	if got := readFile(t, spec.Stdout); got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

// TestSlurm_SlurmVariablesAreTheJobs: env entries that sbatch would read as
// its own options (SBATCH_WAIT holds the submission until the held job
// ends; SBATCH_PARTITION places it elsewhere) reach the job, not sbatch.
func TestSlurm_SlurmVariablesAreTheJobs(t *testing.T) {
	bed := testbed.Start(t)
	spec := slurmSpec(t, bed, "sh", "-c", `echo "wait=$SBATCH_WAIT partition=$SBATCH_PARTITION"`)
	spec.Env = []string{"SBATCH_WAIT=1", "SBATCH_PARTITION=msched-no-such-partition"}
	res := run(t, spec)
	if !res.OK() {
		t.Fatalf("result %+v", res)
	}
	if got, want := readFile(t, spec.Stdout), "wait=1 partition=msched-no-such-partition\n"; got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

// TestSlurm_NameCannotForgeTheState: the job's name (the job file's, the
// user's) is on the same line of scontrol's answer as the job's state, and
// before it; a name that looks like a state must not end the job early.
func TestSlurm_NameCannotForgeTheState(t *testing.T) {
	bed := testbed.Start(t)
	spec := slurmSpec(t, bed, "sh", "-c", "sleep 2; exit 4")
	spec.Slurm.JobName = "x JobState=COMPLETED Reason=None ExitCode=0:0"
	if res := run(t, spec); res.ExitStatus != 4 || res.Reason != "exit status 4" {
		t.Fatalf("result %+v, want exit status 4", res)
	}
}

// TestSlurm_CancelAndWalltime: a cancel and a walltime end the Slurm job,
// and say so.
func TestSlurm_CancelAndWalltime(t *testing.T) {
	bed := testbed.Start(t)
	spec := slurmSpec(t, bed, "sleep", "60")
	h, rec := startSlurm(t, spec)
	if err := h.Cancel(); err != nil {
		t.Fatal(err)
	}
	if res := wait(t, h); res.Reason != "cancelled" || res.OK() {
		t.Fatalf("cancel: %+v", res)
	}
	if j := scontrolJob(t, spec.Slurm, rec.SlurmJob); !j.final() {
		t.Fatalf("after cancel, Slurm job %s is %s", rec.SlurmJob, j.State)
	}
	spec = slurmSpec(t, bed, "sleep", "60")
	spec.Walltime = 2 * time.Second
	if res := run(t, spec); res.Reason != "walltime exceeded" || res.OK() {
		t.Fatalf("walltime: %+v", res)
	}
}

// TestSlurm_ShepherdKilled: without its shepherd a Slurm job must not run
// on unseen: Adopt finds it gone and cancels it in Slurm first.
func TestSlurm_ShepherdKilled(t *testing.T) {
	bed := testbed.Start(t)
	spec := slurmSpec(t, bed, "sleep", "60")
	h, rec := startSlurm(t, spec)
	eventually(t, "the Slurm job running", func() bool { return scontrolJob(t, spec.Slurm, rec.SlurmJob).State == "RUNNING" })
	killShepherdAndAdopt(t, h, spec)
	if j := scontrolJob(t, spec.Slurm, rec.SlurmJob); !j.final() {
		t.Fatalf("Slurm job %s still %s after Adopt found it gone", rec.SlurmJob, j.State)
	}
}

// TestSlurm_ControllerDown: a controller that does not answer is a start
// error that names the host, for the run daemon to mark down.
func TestSlurm_ControllerDown(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	// A cluster whose controller port nobody listens on (the bed's munge,
	// so that authentication is not what fails).
	bed := testbed.Start(t)
	b, err := os.ReadFile(bed.SlurmConf["c1"])
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "SlurmctldPort=") {
			l = "SlurmctldPort=9" // discard: nothing answers there
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := newSpec(t, "true")
	spec.Hosts = []string{"c9n1"}
	spec.Slurm = &Slurm{Conf: conf, Nodes: 1}
	res := run(t, spec)
	if !res.StartError || res.Unreachable != "c9n1" || !strings.Contains(res.Reason, "controller") {
		t.Fatalf("got %+v", res)
	}
}

func scontrolJob(t *testing.T, s *Slurm, id string) slurmJob {
	t.Helper()
	out, err := slurmOutput(context.Background(), s, nil, nil, "", "scontrol", "show", "job", "-o", id)
	if err != nil {
		t.Fatal(err)
	}
	j, err := parseSlurmJob(out)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestSlurm_AfterReboot: a pid file left by a crash of this machine (another
// boot, no shepherd) that names a Slurm job: Adopt cancels that job before
// it reports Gone, so the re-queued job cannot run twice.
func TestSlurm_AfterReboot(t *testing.T) {
	bed := testbed.Start(t)
	s := &Slurm{Conf: bed.SlurmConf["c1"], Nodes: 1}
	out, err := slurmOutput(context.Background(), s, nil, nil, "#!/bin/sh\nsleep 60\n", "sbatch", "--parsable", "--output=/dev/null",
		"--comment="+slurmComment("j1"))
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	dir := t.TempDir()
	rec := PidFile{BootID: "a-boot-before-the-crash", Shepherd: 1, ShepherdStart: 1, SlurmJob: id, SlurmConf: s.Conf,
		SlurmUID: os.Geteuid(), SlurmJID: "j1"}
	data, _ := json.Marshal(rec)
	pid, res := filepath.Join(dir, "j.pid"), filepath.Join(dir, "j.result")
	if err := os.WriteFile(pid, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if a, err := Adopt(pid, res); err != nil || a.State != Gone {
		t.Fatalf("Adopt: %v %v, want gone", a.State, err)
	}
	if j := scontrolJob(t, s, id); !j.final() {
		t.Fatalf("Slurm job %s still %s after Adopt", id, j.State)
	}
}
