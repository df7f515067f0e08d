package spool

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse_RejectsBadJobFiles(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       string // the whole Detail, one problem per line
	}{
		{"empty", "", "job.yaml: empty job file"},
		{"blank", "  \n\n", "job.yaml: empty job file"},
		{"not yaml", "name: [\n", "job.yaml:1: not YAML: did not find expected node content"},
		{"not a mapping", "- a\n- b\n", "job.yaml:1: a job file must be a mapping of fields (name: …, command: […])"},
		{"two documents", "command: [a]\n---\ncommand: [b]\n", "job.yaml:2: more than one YAML document; a job file holds one job"},
		{"unknown field", "name: x\ncommand: [a]\nworkdir: /\nnotify: a@b\ncomand: [a]\n", `job.yaml:5: unknown field "comand"`},
		{"unknown nested field", "command: [a]\nhosts:\n  cnt: 2\n", `job.yaml:3: hosts: unknown field "cnt"`},
		{"duplicate field", "command: [a]\nname: a\nname: b\n", "job.yaml:3: name: given twice (first at line 2)"},
		{"command as a shell line", "name: x\ncommand: ./prog -n 5\n",
			`job.yaml:2: command: want a list of strings (argv, e.g. ["./prog", "-n", "5"]; never a shell line), got a string "./prog -n 5"`},
		{"command missing", "name: x\n", "job.yaml: command: required: the program and its arguments, as a list"},
		{"command empty list", "name: x\ncommand: []\n", "job.yaml:2: command: required: the program and its arguments, as a list"},
		{"command empty program", "command: [\"\", -x]\n", "job.yaml:1: command[0]: the program name is empty"},
		{"command nested list", "command: [[a]]\n", "job.yaml:1: command[0]: want a string, got a list"},
		{"hosts.min zero", "command: [a]\nhosts:\n  min: 0\n  max: 4\n", "job.yaml:3: hosts.min: must be ≥ 1, got 0"},
		{"hosts.count negative", "command: [a]\nhosts: {count: -2}\n", "job.yaml:2: hosts.count: must be ≥ 1, got -2"},
		{"hosts.max explicit zero", "command: [a]\nhosts: {max: 0}\n", "job.yaml:2: hosts.max: must be ≥ 1, got 0"},
		{"hosts min > max", "command: [a]\nhosts:\n  min: 8\n  max: 4\n", "job.yaml:4: hosts.max: must be ≥ hosts.min (8), got 4"},
		{"hosts count and range", "command: [a]\nhosts: {count: 2, max: 4}\n", "job.yaml:2: hosts: give count, or min and max, not both"},
		{"hosts empty", "command: [a]\nhosts: {}\n", "job.yaml:2: hosts: want count, or min and max, or an arch or cluster"},
		{"hosts null", "command: [a]\nhosts:\n", "job.yaml:2: hosts: want {count: N} or {min: A, max: B}, got nothing"},
		{"hosts.count not a number", "command: [a]\nhosts:\n  count: many\n", `job.yaml:3: hosts.count: want an integer, got a string "many"`},
		{"hosts.count fractional", "command: [a]\nhosts: {count: 2.5}\n", `job.yaml:2: hosts.count: want an integer, got a number "2.5"`},
		{"model without name", "command: [a]\nmodel:\n  params: {N: 5}\n", "job.yaml:2: model.name: required"},
		{"model param not a number", "command: [a]\nmodel: {name: m, params: {N: big}}\n", `job.yaml:2: model.params.N: want a number, got a string "big"`},
		{"walltime garbage", "command: [a]\nwalltime: soon\n", `job.yaml:2: walltime: "soon" is not a duration: want a duration like 2h30m or 90s, seconds like 5400, [D-]HH:MM:SS like 1-12:00:00, MM:SS like 90:00, or days like 2d or 1d12h`},
		{"walltime mapping", "command: [a]\nwalltime: {h: 2}\n", "job.yaml:2: walltime: want a duration like 2h30m or 90s, seconds like 5400, [D-]HH:MM:SS like 1-12:00:00, MM:SS like 90:00, or days like 2d or 1d12h"},
		{"walltime NaN seconds", "command: [a]\nwalltime: NaN\n", `job.yaml:2: walltime: "NaN" is out of range (at most 36500 days)`},
		{"errors after a bad walltime still reported", "walltime: soon\ncommand: x\n",
			"job.yaml:1: walltime: \"soon\" is not a duration: want a duration like 2h30m or 90s, seconds like 5400, [D-]HH:MM:SS like 1-12:00:00, MM:SS like 90:00, or days like 2d or 1d12h\njob.yaml:2: command: want a list of strings (argv, e.g. [\"./prog\", \"-n\", \"5\"]; never a shell line), got a string \"x\""},
		{"walltime negative", "command: [a]\nwalltime: -5s\n", "job.yaml:2: walltime: must be positive, got -5000000000"},
		{"several problems", "command: []\nhosts: {min: 0}\nmodel: {params: {}}\n",
			"job.yaml:1: command: required: the program and its arguments, as a list\njob.yaml:2: hosts.min: must be ≥ 1, got 0\njob.yaml:3: model.name: required"},
		{"bad state in history", "command: [a]\nhistory:\n  - {state: queued, at: 2026-01-01T00:00:00Z}\n  - {state: limbo, at: 2026-01-01T00:00:00Z}\n",
			`job.yaml:4: history[1].state: unknown state "limbo"`},
		{"bad jid", "command: [a]\njid: 123\n", `job.yaml:2: jid: "123" is not a job id like J000123`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := Parse("job.yaml", []byte(tc.data))
			if err == nil {
				t.Fatalf("parsed: %+v", j)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			if got := pe.Detail(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "spool: job.yaml") {
				t.Errorf("Error() = %q, want the spool: prefix", err)
			}
		})
	}
}

func TestParse_SubmissionMayNotSetDaemonFields(t *testing.T) {
	data := "command: [a]\njid: J000001\nuser: root\nhistory: []\n"
	if _, err := Parse("j", []byte(data)); err != nil {
		t.Fatalf("a daemon's job file with these fields must parse: %v", err)
	}
	_, err := ParseSubmission("j", []byte(data))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("submission setting jid/user/history accepted: %v", err)
	}
	want := "j:2: jid: set by msched, not by the submitter\nj:3: user: set by msched, not by the submitter\nj:4: history: set by msched, not by the submitter"
	if pe.Detail() != want {
		t.Errorf("got  %s\nwant %s", pe.Detail(), want)
	}
}

func TestParse_Accepts(t *testing.T) {
	data, err := os.ReadFile("testdata/particles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := ParseSubmission("particles.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	want := &Job{
		Name: "particles", Command: []string{"./AppParticles", "-n", "20000"}, Workdir: "/home/alice/particles",
		Notify: "alice@example.org", Hosts: &Hosts{Min: 1, Max: 16},
		Model:    &Model{Name: "particles", Params: map[string]float64{"N": 20000}},
		Walltime: Duration(2 * time.Hour), Stdout: "out.txt",
	}
	if !reflect.DeepEqual(j, want) {
		t.Errorf("got %+v\nwant %+v", j, want)
	}
	for _, tc := range []struct {
		hosts    string
		min, max int
	}{{"", 1, 1}, {"hosts: {count: 8}\n", 8, 8}, {"hosts: {min: 4}\n", 4, 0}, {"hosts: {max: 4, arch: x86_64}\n", 1, 4}, {"hosts: {cluster: ws}\n", 1, 1}} {
		j, err := Parse("j", []byte("command: [a]\n"+tc.hosts))
		if err != nil {
			t.Fatal(err)
		}
		if min, max := j.Hosts.Range(); min != tc.min || max != tc.max {
			t.Errorf("%q: range %d..%d, want %d..%d", tc.hosts, min, max, tc.min, tc.max)
		}
	}
}

func TestParse_Walltime(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"2h": 2 * time.Hour, "90s": 90 * time.Second, "1h30m": 90 * time.Minute, "90": 90 * time.Second, "1.5": 1500 * time.Millisecond,
	} {
		j, err := Parse("j", []byte("command: [a]\nwalltime: "+in+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if time.Duration(j.Walltime) != want {
			t.Errorf("walltime %s = %v, want %v", in, time.Duration(j.Walltime), want)
		}
	}
}

func TestJob_RoundTrip(t *testing.T) {
	zero, one := 0, 1
	at := time.Date(2026, 3, 4, 5, 6, 7, 891011, time.UTC)
	for _, j := range []*Job{
		{Command: []string{"true"}},
		{
			Name: "p", Command: []string{"./p", "-n", "5", "a b", "$HOME"}, Workdir: "/w", Notify: "a@b",
			Hosts: &Hosts{Count: 4, Arch: "x86_64", Cluster: "c1"}, Model: &Model{Name: "m", Params: map[string]float64{"N": 1e6, "eps": 0.001}},
			Walltime: Duration(90 * time.Second), Stdout: "o", Stderr: "e",
			JID: "J000042", User: "alice", SubmittedAt: at,
			History:  []Event{{Submitted, at, "as p.yaml"}, {Queued, at.Add(time.Second), ""}, {Runnable, at.Add(2 * time.Second), "ga-xms"}},
			Schedule: &Schedule{Hosts: []string{"h1", "h2"}, PredictedSeconds: 12.5, DecidedAt: at, Policy: "ga-xms"},
			Run:      &RunInfo{StartedAt: at, EndedAt: at.Add(time.Hour), ExitStatus: &zero, PID: 123, PGID: 123, Attempts: 2, Host: "h1"},
		},
		{Command: []string{"x"}, JID: "J1000000", Run: &RunInfo{ExitStatus: &one, Signal: "SIGKILL"}, CancelRequested: true, Reason: "cancelled"},
		{JID: "J000007", Reason: "job.yaml:1: not YAML", Original: "name: [\n\x00\xff binary\n"},
	} {
		b, err := j.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse("j", b)
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		if !reflect.DeepEqual(got, j) {
			t.Errorf("round trip changed the job:\n got %+v\nwant %+v\n%s", got, j, b)
		}
	}
}

// The fields issue 11 added: env, launch and ranks_per_host, submit_dir.
func TestParse_EnvLaunch(t *testing.T) {
	j, err := ParseSubmission("j", []byte("command: [a]\nenv: {OMP_NUM_THREADS: \"4\", X_1: \"a b\"}\nlaunch: mpi\nranks_per_host: 2\nsubmit_dir: /home/a\n"))
	if err != nil {
		t.Fatal(err)
	}
	if j.Env["OMP_NUM_THREADS"] != "4" || j.Env["X_1"] != "a b" || j.Launch != LaunchMPI || j.RanksPerHost != 2 || j.SubmitDir != "/home/a" {
		t.Fatalf("got %+v", j)
	}
	for _, tc := range []struct{ doc, want string }{
		{"env: {MSCHED_JID: x}", "env.MSCHED_JID: MSCHED_* variables are set by msched"},
		{"env: {1X: x}", "env.1X: not a variable name"},
		{"env: {A-B: x}", "env.A-B: not a variable name"},
		{"launch: ssh", `launch: unknown launch "ssh"`},
		{"ranks_per_host: 2", "ranks_per_host: only with launch: mpi"},
		{"launch: mpi\nranks_per_host: 0", "ranks_per_host: must be 1 to 1024, got 0"},
		{"submit_dir: rel", `submit_dir: must be an absolute path, got "rel"`},
		{"uid: 0", "uid: set by msched, not by the submitter"},
	} {
		_, err := ParseSubmission("j", []byte("command: [a]\n"+tc.doc+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.doc, err, tc.want)
		}
	}
	if _, err := ParseSubmission("j", []byte("command: [-np, x]\nlaunch: mpi\n")); err == nil || !strings.Contains(err.Error(), "must not start with '-'") {
		t.Errorf("mpi with an option for a program: %v", err)
	}
}

// Co-allocated requests: components and request, each problem named by
// its field and line.
func TestParse_Components(t *testing.T) {
	j, err := ParseSubmission("j", []byte("command: [a]\ncomponents: [8, 4, 4]\nrequest: ordered\nhosts: {arch: x86_64}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := j.HostRange(); lo != 16 || hi != 16 || j.RequestType() != RequestOrdered {
		t.Fatalf("range %d..%d, request %q", lo, hi, j.RequestType())
	}
	j, err = ParseSubmission("j", []byte("command: [a]\ncomponents: [2, 1]\n"))
	if err != nil || j.RequestType() != RequestUnordered {
		t.Fatalf("default request: %v %q", err, j.RequestType())
	}
	if j, err := ParseSubmission("j", []byte("command: [a]\nhosts: {min: 2, max: 4}\n")); err != nil || j.RequestType() != "" {
		t.Fatalf("no components: %v %q", err, j.RequestType())
	} else if lo, hi := j.HostRange(); lo != 2 || hi != 4 {
		t.Fatalf("range %d..%d", lo, hi)
	}
	for _, tc := range []struct{ doc, want string }{
		{"request: total", "j:2: request: only with components"},
		{"components: [1]\nrequest: scattered", `j:3: request: unknown request "scattered"`},
		{"components: []", "j:2: components: want a list of host counts"},
		{"components: 4", "j:2: components:"},
		{"components:\n  - 4\n  - 0", "j:4: components[1]: must be ≥ 1, got 0"},
		{"components: [4, 2.5]", `j:2: components[1]: want an integer, got "2.5"`},
		{"components: [4, -1]", "components[1]: must be ≥ 1, got -1"},
		// yaml.v3 drops the nulls from a list of ints.
		{"components: [1, null]", `j:2: components[1]: want an integer, got "null"`},
		{"components: [null]", `j:2: components[0]: want an integer, got "null"`},
		{"components:\n  - 2\n  - ~\n  - 0", "j:4: components[1]: want an integer, got \"~\"\nj:5: components[2]: must be ≥ 1, got 0"},
		{"components: [4]\nhosts: {count: 4}", "j:3: hosts.count: give components or a host count, not both"},
		{"components: [4]\nhosts:\n  cluster: a", "j:4: hosts.cluster: a co-allocated job spans clusters"},
		{"components: [" + strings.Repeat("1, ", MaxComponents) + "1]", "components: 65 components, over the limit of 64"},
		// A sum that overflowed int once gave a job of -9223372036854775807
		// hosts, which no policy rejected and fcfs kept at the queue's head.
		{"components: [9223372036854775807, 2]\nrequest: total", "j:2: components[0]: must be at most 1048576, got 9223372036854775807"},
		{"components: [1048576, 1048576]", "j:2: components: 2097152 hosts in all, over the limit of 1048576"},
		{"hosts: {count: 99999999999}", "j:2: hosts.count: must be at most 1048576, got 99999999999"},
		{"hosts: {min: 1, max: 1048577}", "j:2: hosts.max: must be at most 1048576, got 1048577"},
	} {
		_, err := ParseSubmission("j", []byte("command: [a]\n"+tc.doc+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func TestParse_Mail(t *testing.T) {
	j, err := ParseSubmission("j", []byte("command: [a]\nmail: [begin, fail]\n"))
	if err != nil || len(j.Mail) != 2 || j.Mail[0] != MailBegin || j.Mail[1] != MailFail {
		t.Fatalf("%v %v", err, j)
	}
	for _, tc := range []struct{ doc, want string }{
		{"mail: [begin, always]", `j:2: mail[1]: unknown "always" (want begin, end or fail)`},
		{"mail:\n  - end\n  - x", `j:4: mail[1]: unknown "x"`},
		{"mail: end", "j:2: mail:"},
	} {
		_, err := ParseSubmission("j", []byte("command: [a]\n"+tc.doc+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.doc, err, tc.want)
		}
	}
}
