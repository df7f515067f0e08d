package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/daemons"
	"msched/policy"
	"msched/spool"
)

// submitFlags are msched submit's flags: how it reports and waits, and
// the fields of a job given on the command line (after --).
type submitFlags struct {
	parsable, wait bool
	jidWait        time.Duration

	name, hosts, arch, cluster, walltime, model string
	params, env                                 []string
	workdir, stdout, stderr, notify, mail       string
	components, request, launch                 string
	ranksPerHost                                int
	after, afterOK                              []string
	array                                       string
}

// jobFlags are the flags that describe a job given after --; a job file
// says these things itself. Each names the job file's field it sets (the
// problems ParseSubmission finds are told by flag: flagOf).
var jobFlags = map[string]string{
	"name": "name", "hosts": "hosts", "arch": "hosts.arch", "cluster": "hosts.cluster", "walltime": "walltime",
	"model": "model", "param": "model.params", "workdir": "workdir", "stdout": "stdout", "stderr": "stderr",
	"env": "env", "mail": "mail", "notify": "notify", "components": "components", "request": "request",
	"launch": "launch", "ranks-per-host": "ranks_per_host",
}

// defaultJIDWait bounds how long msched submit waits for init to give its
// jobs their JIDs: init takes a file renamed into submitted/ at once, so
// this is only reached when init is stuck or far behind.
const defaultJIDWait = 10 * time.Second

func newSubmitCmd(v *viper.Viper) *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit [flags] FILE… | submit [flags] - | submit [flags] -- COMMAND [ARG…]",
		Short: "Submit jobs: job files, a job file on standard input, or a command; print their JIDs",
		Long: `submit checks every job, exactly as the init daemon will (strict YAML: unknown
fields, wrong types, a missing command, impossible host counts, the bounds on
size, arguments and environment); if any is invalid it prints the problems
with their lines and submits nothing. Otherwise each job is written atomically
into the spool's submitted/ directory, submit waits for init to take it, and
prints its JID:

  job.yaml: submitted as J000012

A job is given as a job file (FILE), as a job file on standard input (-), or
as a command after --, whose job-file fields are the flags below (the job
goes through the same checks as a file; its name is the command's unless
--name says). Each job gets submit_dir: the directory submit ran in (relative
paths resolve against it), unless its file sets submit_dir. A job file must
be a regular file (a symbolic link is not followed, a FIFO not read) of at
most init.max_job_bytes (1 MiB). A job with components (co-allocation) is
also checked against the hosts file: one that no state of its clusters could
ever hold is refused. The job runs as you (the owner of the file submitted).

JIDs. init, not submit, gives a job its JID, so submit waits up to --jid-wait
(10s) for init to take each file. When init is not running (or does not take
the file in time) submit says so and prints where the file waits in
submitted/ instead: the job gets its JID when init runs (msched status lists
it). It never waits longer.

Arrays (--array or array: in the job file): one submission, one job per
index, each with MSCHED_ARRAY_INDEX and MSCHED_ARRAY_JOB_ID (the array's JID,
its first member's) in its environment. "1-100" is indexes 1 to 100; "1,3,5-9"
a list; "0-30:10" every 10th; "%10" at the end runs at most 10 of them at
once. At most 10,000 members. submit prints the array's JIDs.

Dependencies (--after, --afterok, or after: and afterok: in the job file): the
job waits until every job of --after has ended (however it ended) and every
job of --afterok has exited with status 0; it is rejected if an --afterok job
ends otherwise, or if a JID names no job submitted before it. JIDs may be
written J000010, J10 or 10. msched status shows "waiting for J000010".

--wait waits until every job submitted has ended, then exits with the first
non-zero exit status among them, in the order submitted (128+N for a job
killed by signal N; 4 for a job rejected or that could not start, with the
reason), or 0. Ctrl-C stops the waiting, not the jobs.

Walltimes (--walltime, walltime:) are a Go duration (90s, 2h30m), seconds
(5400), [D-]HH:MM:SS (1:30:00, 2-00:00:00), MM:SS (90:00) or days (2d, 1d12h).

Exit codes: 0 submitted (or, with --wait, every job exited 0); 2 wrong flags
or arguments; 4 an invalid job (nothing submitted); 1 another error; with
--wait, the job's status.`,
		Example: `  msched submit job.yaml                          # job.yaml: submitted as J000012
  msched submit --parsable a.yaml b.yaml          # J000013 and J000014, one per line
  generate-job | msched submit -                  # a job file on standard input
  msched submit --walltime 1:30:00 --hosts 4 -- ./sim -n 20000
  msched submit --hosts 2-8 --model particles --param N=20000 -- ./AppParticles -n 20000
  msched submit --launch mpi --hosts 4 --ranks-per-host 2 -- ./mpi_prog
  msched submit --components 8,4,4 --request unordered -- ./coupled
  msched submit --array 1-100%10 --env MODE=fast -- ./sweep    # $MSCHED_ARRAY_INDEX is 1..100
  msched submit --afterok 12,13 post.yaml         # after J000012 and J000013 exit 0
  jid=$(msched submit --parsable prep.yaml) && msched submit --after "$jid" -- ./cleanup
  msched submit --wait -- ./test.sh; echo $?      # the job's own exit status`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runSubmit(cmd, v, &f, args) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.parsable, "parsable", false, "print only the JIDs, one per line (an array: each member's); what is not known yet goes to standard error")
	fl.BoolVar(&f.wait, "wait", false, "wait until the jobs have ended and exit with the first non-zero exit status (128+N for signal N; 4: rejected or never started)")
	fl.DurationVar(&f.jidWait, "jid-wait", defaultJIDWait, "wait at most this long for init to give the jobs their JIDs (0: do not wait; print where each waits)")
	fl.StringVar(&f.name, "name", "", "the job's name (default: the command's name)")
	fl.StringVar(&f.hosts, "hosts", "", "how many hosts: N, or A-B (moldable: the scheduler picks between A and B), or A- (at least A)")
	fl.StringVar(&f.arch, "arch", "", "only hosts of this architecture (the hosts file's arch)")
	fl.StringVar(&f.cluster, "cluster", "", "only hosts of this cluster")
	fl.StringVar(&f.walltime, "walltime", "", "kill the job after this long (it also caps the run-time estimate): 90s, 2h30m, 5400, 1:30:00, 2-00:00:00, 90:00, 2d, 1d12h")
	fl.StringVar(&f.model, "model", "", "the performance model (a file in the models directory) that predicts the run time")
	fl.StringArrayVar(&f.params, "param", nil, "a parameter of --model, NAME=NUMBER (repeat for more)")
	fl.StringVar(&f.workdir, "workdir", "", "run in this directory (default: where submit ran)")
	fl.StringVar(&f.stdout, "stdout", "", "write the job's standard output here (default: the spool's output/<JID>/stdout)")
	fl.StringVar(&f.stderr, "stderr", "", "write the job's standard error here (default: the spool's output/<JID>/stderr)")
	fl.StringArrayVar(&f.env, "env", nil, "set a variable in the job's environment, NAME=VALUE (repeat for more)")
	fl.StringVar(&f.mail, "mail", "", "when to mail you: a comma-separated list of begin, end, fail")
	fl.StringVar(&f.notify, "notify", "", "mail the report to this address (default: you)")
	fl.StringVar(&f.components, "components", "", "co-allocation: hosts per cluster, such as 8,4,4 (instead of --hosts)")
	fl.StringVar(&f.request, "request", "", "how --components map to clusters: unordered (default), ordered or total")
	fl.StringVar(&f.launch, "launch", "", "mpi: run the command under mpirun over all the job's hosts")
	fl.IntVar(&f.ranksPerHost, "ranks-per-host", 0, "MPI ranks on each host, with --launch mpi (default 1)")
	fl.StringSliceVar(&f.after, "after", nil, "start after these jobs have ended, however they ended: JIDs like J000010, J10 or 10, comma-separated or repeated")
	fl.StringSliceVar(&f.afterOK, "afterok", nil, "start after these jobs have exited with status 0; rejected if one does not")
	fl.StringVar(&f.array, "array", "", "a job array: indexes such as 1-100, 1,3,5-9 or 0-30:10, and %N to run at most N at once")
	return cmd
}

// submission is one job msched submit submits.
type submission struct {
	label   string // what messages call it: the file, stdin, or the job's name
	base    string // its name in submitted/
	data    []byte
	job     *spool.Job
	members int // 1, or an array's
	ticket  spool.Ticket
	claim   *spool.TicketClaim // init's claim of it, once seen
}

// jids are the JIDs of s's jobs, once known: its JID, or an array's
// members (nil while init has not reserved them).
func (s *submission) jids() []string {
	switch {
	case s.claim == nil:
		return nil
	case s.members == 1:
		return []string{s.claim.JID}
	}
	return s.claim.Members
}

func runSubmit(cmd *cobra.Command, v *viper.Viper, f *submitFlags, args []string) error {
	files, command := args, []string(nil)
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		files, command = args[:dash], args[dash:]
		if len(command) == 0 {
			return codef(exitUsage, "nothing after --: give the command to run, as in msched submit -- ./prog ARG…")
		}
	}
	switch {
	case len(command) > 0 && len(files) > 0:
		return codef(exitUsage, "give job files or a command after --, not both (%s and -- %s)", files[0], command[0])
	case len(command) == 0 && len(files) == 0:
		return codef(exitUsage, "give a job file, - for a job file on standard input, or a command after --")
	}
	if len(files) > 0 {
		for name, field := range jobFlags {
			if cmd.Flags().Changed(name) {
				return codef(exitUsage, "--%s describes a job given after --; a job file says it itself (%s:)", name, strings.Split(field, ".")[0])
			}
		}
	}
	stdin := 0
	for _, file := range files {
		if file == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return codef(exitUsage, "- (standard input) given %d times: it holds one job file", stdin)
	}
	extra, err := f.submitFields()
	if err != nil {
		return withCode(exitUsage, err)
	}
	sp, err := openSpool(v)
	if err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("submit: the current directory, recorded as submit_dir: %w", err)
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}

	var subs []*submission
	if len(command) > 0 {
		s, err := f.commandJob(command, cwd)
		if err != nil {
			return withCode(exitUsage, err)
		}
		subs = append(subs, s)
	}
	for _, file := range files {
		s := &submission{label: file, base: filepath.Base(file)}
		if file == "-" {
			s.label, s.base = "stdin", "stdin"
			s.data, err = readStdin(ctx, cmd.InOrStdin(), sp.JobFileLimit())
		} else {
			s.data, err = spool.ReadJobFile(file, sp.JobFileLimit())
		}
		if err != nil {
			return fmt.Errorf("%w; nothing submitted", err)
		}
		subs = append(subs, s)
	}
	if err := checkSubmissions(cmd, v, sp, subs, extra, cwd, len(command) > 0); err != nil {
		return err
	}

	// Submit, then learn the JIDs: the watch of init's claims comes first,
	// so that no claim is missed.
	last, _ := sp.LastJID()
	watch, werr := sp.WatchClaims()
	if werr == nil {
		defer watch.Close()
	}
	for i, s := range subs {
		if s.ticket, err = sp.SubmitTicket(s.base, s.data); err != nil {
			for _, done := range subs[:i] {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: submitted as %s\n", done.label, sp.Dir(spool.Submitted)+"/"+done.ticket.Name)
			}
			if s.ticket.Name != "" {
				// In submitted/ (it will run: do not submit it again),
				// but not made durable, or not seen as init will see it.
				return fmt.Errorf("%s: submitted as %s, but: %w", s.label, sp.Dir(spool.Submitted)+"/"+s.ticket.Name, err)
			}
			return fmt.Errorf("%s: %w", s.label, err)
		}
	}
	initState := daemonState(sp, "init")
	bound := f.jidWait
	switch {
	case f.wait:
		if initState != spool.HealthUp {
			fmt.Fprintf(cmd.ErrOrStderr(), "init is %s: waiting for it to take the jobs (Ctrl-C stops waiting; the jobs stay submitted)\n", initState)
		}
		bound = -1 // as long as ctx lets
	case initState != spool.HealthUp:
		bound = 0 // nobody will take them now
	}
	learnJIDs(ctx, sp, watch, last, subs, bound)
	refused := reportSubmitted(ctx, cmd, sp, f.parsable, subs, initState, f.jidWait)
	if !f.wait {
		return refused
	}
	for _, s := range subs {
		if s.jids() == nil {
			if refused != nil {
				return refused // init rejected it (an array whose members it never wrote)
			}
			return codef(128+2, "stopped waiting: %s has no JID yet (msched status lists it)", s.label)
		}
	}
	return waitSubmitted(ctx, cmd, sp, f.parsable, subs)
}

// submitFields reads --after, --afterok and --array.
func (f *submitFlags) submitFields() (spool.SubmitFields, error) {
	var out spool.SubmitFields
	for _, l := range []struct {
		flag string
		in   []string
		out  *[]string
	}{{"after", f.after, &out.After}, {"afterok", f.afterOK, &out.AfterOK}} {
		for _, s := range l.in {
			jid, err := spool.ParseJID(strings.TrimSpace(s))
			if err != nil {
				return out, fmt.Errorf("--%s: %v", l.flag, strings.TrimPrefix(err.Error(), "spool: "))
			}
			*l.out = append(*l.out, jid)
		}
	}
	if f.array != "" {
		if _, err := spool.ParseArray(f.array); err != nil {
			return out, fmt.Errorf("--array: %v", err)
		}
		out.Array = f.array
	}
	return out, nil
}

// commandJob builds the job of a command given after --, with the flags'
// fields, as a job file: it is checked as one (checkSubmissions).
func (f *submitFlags) commandJob(argv []string, cwd string) (*submission, error) {
	j := &spool.Job{Name: f.name, Command: argv, Workdir: f.workdir, Stdout: f.stdout, Stderr: f.stderr,
		Notify: f.notify, SubmitDir: cwd, Request: f.request, Launch: f.launch, RanksPerHost: f.ranksPerHost}
	if j.Name == "" {
		j.Name = filepath.Base(argv[0])
	}
	if f.hosts != "" || f.arch != "" || f.cluster != "" {
		j.Hosts = &spool.Hosts{Arch: f.arch, Cluster: f.cluster}
		if f.hosts != "" {
			min, max, err := parseHostsFlag(f.hosts)
			if err != nil {
				return nil, err
			}
			if min == max {
				j.Hosts.Count = min
			} else {
				j.Hosts.Min, j.Hosts.Max = min, max
			}
		}
	}
	if f.walltime != "" {
		d, err := spool.ParseWalltime(f.walltime)
		if err != nil {
			return nil, fmt.Errorf("--walltime: %v", err)
		}
		if d <= 0 {
			return nil, fmt.Errorf("--walltime: must be positive, got %s", f.walltime)
		}
		j.Walltime = spool.Duration(d)
	}
	if len(f.params) > 0 && f.model == "" {
		return nil, errors.New("--param is a parameter of a model: give --model too")
	}
	if f.model != "" {
		j.Model = &spool.Model{Name: f.model}
		for _, p := range f.params {
			k, val, ok := strings.Cut(p, "=")
			n, err := strconv.ParseFloat(val, 64)
			if !ok || k == "" || err != nil {
				return nil, fmt.Errorf("--param %q: want NAME=NUMBER, such as N=20000", p)
			}
			if j.Model.Params == nil {
				j.Model.Params = map[string]float64{}
			}
			j.Model.Params[k] = n
		}
	}
	for _, e := range f.env {
		k, val, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want NAME=VALUE", e)
		}
		if j.Env == nil {
			j.Env = map[string]string{}
		}
		j.Env[k] = val
	}
	if f.mail != "" {
		j.Mail = strings.Split(f.mail, ",")
	}
	if f.components != "" {
		for _, c := range strings.Split(f.components, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil {
				return nil, fmt.Errorf("--components %q: want host counts, one per cluster, such as 8,4,4", f.components)
			}
			j.Components = append(j.Components, n)
		}
	}
	data, err := j.Marshal()
	if err != nil {
		return nil, err
	}
	return &submission{label: j.Name, base: j.Name, data: data}, nil
}

// parseHostsFlag reads --hosts: N, A-B or A-.
func parseHostsFlag(s string) (min, max int, err error) {
	bad := fmt.Errorf("--hosts %q: want a number of hosts N, a range A-B (moldable), or A- (at least A), each at least 1", s)
	a, b, isRange := strings.Cut(s, "-")
	if min, err = strconv.Atoi(a); err != nil || min < 1 {
		return 0, 0, bad
	}
	switch {
	case !isRange:
		return min, min, nil
	case b == "":
		return min, 0, nil
	}
	if max, err = strconv.Atoi(b); err != nil || max < min {
		return 0, 0, bad
	}
	return min, max, nil
}

// readStdin reads a job file from r, bounded as a file is, and gives up
// when ctx ends (the read itself cannot be interrupted: it is left).
func readStdin(ctx context.Context, r io.Reader, max int64) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := spool.ReadJobStream(r, "stdin", max)
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("stdin: %w", ctx.Err())
	}
}

// checkSubmissions judges every job as init will, and refuses them all
// (exitRefused) if one is invalid: a file's problems with its lines, a
// command's with the flags that made them. It fills in what is submitted:
// the job with extra (--after, --afterok, --array) and submit_dir added.
func checkSubmissions(cmd *cobra.Command, v *viper.Viper, sp *spool.Spool, subs []*submission, extra spool.SubmitFields, cwd string, command bool) error {
	var hosts []policy.Host // the hosts file's, read for the first job with components
	bad := 0
	invalid := func(s *submission, how string, err error) {
		var pe *spool.ParseError
		msg := err.Error()
		if errors.As(err, &pe) {
			msg = pe.Detail()
			if command {
				msg = flagProblems(pe)
			}
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: invalid%s:\n  %s\n", s.label, how, strings.ReplaceAll(msg, "\n", "\n  "))
		bad++
	}
	for _, s := range subs {
		// The problems of the file as the user wrote it (its lines).
		j, err := spool.ParseSubmission(s.base, s.data)
		if err != nil {
			invalid(s, "", err)
			continue
		}
		if len(j.Components) > 0 {
			// A component request no cluster state could ever hold
			// would wait for nothing; the scheduler would reject it.
			if hosts == nil {
				if hosts, err = submitHosts(v); err != nil {
					return fmt.Errorf("%w; nothing submitted", err)
				}
			}
			q := daemons.QueuedJob(j, len(hosts))
			if err := policy.CanHold(&q, hosts); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: components: the hosts file can never hold it: %v\n", s.label, err)
				bad++
				continue
			}
		}
		// What init will judge: the file with the flags' fields and
		// submit_dir added.
		if s.data, err = spool.AddSubmitFields(s.data, extra); err != nil {
			return withCode(exitUsage, fmt.Errorf("%s: %v; nothing submitted", s.label, strings.TrimPrefix(err.Error(), "spool: ")))
		}
		if s.data, err = spool.SetSubmitDir(s.data, cwd); err != nil {
			return fmt.Errorf("%s: %w; nothing submitted", s.label, err)
		}
		how := " with submit_dir added"
		if extra.Array != "" || len(extra.After)+len(extra.AfterOK) > 0 {
			how = " with the flags' fields and submit_dir added"
		}
		if s.job, err = sp.CheckSubmission(s.base, s.data); err != nil {
			invalid(s, how, err)
			continue
		}
		s.members = 1
		if s.job.Array != "" {
			a, _ := spool.ParseArray(s.job.Array) // checked
			s.members = len(a.Indexes)
		}
	}
	if bad > 0 {
		return codef(exitRefused, "%d of %d jobs invalid; nothing submitted", bad, len(subs))
	}
	return nil
}

// flagProblems renders the problems of a job given on the command line by
// the flags that made them ("--walltime: must be positive"), not by the
// lines of the file submit made of them.
func flagProblems(pe *spool.ParseError) string {
	lines := make([]string, 0, len(pe.Problems)+1)
	for _, p := range pe.Problems {
		lines = append(lines, flagOf(p.Field)+": "+p.Msg)
	}
	if pe.Omitted > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more problems", pe.Omitted))
	}
	return strings.Join(lines, "\n")
}

// flagOf names the flag that sets a job-file field (field paths such as
// hosts.count, env.X, command[0]).
func flagOf(field string) string {
	switch {
	case field == "":
		return "the job"
	case strings.HasPrefix(field, "command"):
		return "the command after -- (" + field + ")"
	case strings.HasPrefix(field, "after") || strings.HasPrefix(field, "array"):
		return "--" + strings.SplitN(strings.SplitN(field, "[", 2)[0], ".", 2)[0] + " (" + field + ")"
	}
	best := ""
	for name, f := range jobFlags {
		if (field == f || strings.HasPrefix(field, f+".") || strings.HasPrefix(field, f+"[")) && len(f) > len(jobFlags[best]) {
			best = name
		}
	}
	if best == "" {
		return field
	}
	if field == jobFlags[best] {
		return "--" + best
	}
	return "--" + best + " (" + field + ")"
}

// daemonState is the health of daemon d, as its heartbeat says (HealthUp
// when it cannot be read: then submit waits, bounded, as if it were up).
func daemonState(sp *spool.Spool, d string) string {
	hs, err := sp.Health(time.Now())
	if err != nil {
		return spool.HealthUp
	}
	for _, h := range hs {
		if h.Daemon == d {
			return h.State
		}
	}
	return spool.HealthUp
}

// learnJIDs waits for init's claims of subs, bounded (bound 0: looks
// once; below 0: until ctx ends): through the watch when there is one,
// and by looking (FindTicket) when its events were lost, every second
// besides, and at the end. An array waits for its members' JIDs too, but
// not once it is rejected (by init: its JID alone is all it gets).
func learnJIDs(ctx context.Context, sp *spool.Spool, watch *spool.ClaimWatch, last int64, subs []*submission, bound time.Duration) {
	known := func(s *submission) bool {
		if s.jids() != nil {
			return true
		}
		if s.claim != nil { // an array's JID, not yet its members
			st, _ := sp.StateOf(s.claim.JID)
			return st == spool.Rejected
		}
		return false
	}
	look := func() {
		for _, s := range subs {
			if !known(s) {
				if c, ok, err := sp.FindTicket(s.ticket, last); err == nil && ok {
					s.claim = &c
				}
			}
		}
	}
	all := func() bool {
		for _, s := range subs {
			if !known(s) {
				return false
			}
		}
		return true
	}
	start := time.Now()
	lastLook := start
	for !all() {
		left := bound - time.Since(start)
		if bound >= 0 && left <= 0 || ctx.Err() != nil {
			break
		}
		slice := 200 * time.Millisecond
		if bound >= 0 {
			slice = min(slice, left)
		}
		if watch == nil {
			sleepCtx(ctx, min(slice, 50*time.Millisecond))
			look()
			continue
		}
		cs, lost, err := watch.Claims(ctx, slice)
		for _, c := range cs {
			for _, s := range subs {
				if s.claim == nil || s.claim.JID == c.JID {
					if sp.Claimed(s.ticket, c) {
						s.claim = &c
					}
				}
			}
		}
		if lost || err != nil || time.Since(lastLook) > time.Second {
			look()
			lastLook = time.Now()
		}
	}
	if !all() {
		look()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// reportSubmitted prints each job's JID, or, for one whose JID is not
// known, where it waits and why (on standard error with --parsable, whose
// standard output is JIDs only). A job init has rejected already (a
// refusal submit's checks cannot see: the daemons serve another user) is
// said to be, with init's reason, and is exitRefused.
func reportSubmitted(ctx context.Context, cmd *cobra.Command, sp *spool.Spool, parsable bool, subs []*submission, initState string, jidWait time.Duration) error {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	note := out
	if parsable {
		note = errw
	}
	var firsts []string
	for _, s := range subs {
		if s.claim != nil {
			firsts = append(firsts, s.claim.JID)
		}
	}
	status, _ := daemons.LookupJobs(ctx, sp, firsts) // nil on error: none is known rejected
	var refused error
	for _, s := range subs {
		if s.claim != nil {
			if st := status[s.claim.JID]; st.Ended && !st.Outcome.Exited {
				fmt.Fprintf(note, "%s: submitted as %s, and rejected by init: %s\n", s.label, s.claim.JID,
					strings.ReplaceAll(st.Outcome.Reason, "\n", "\n  "))
				if parsable {
					fmt.Fprintln(out, s.claim.JID)
				}
				if refused == nil {
					refused = codef(exitRefused, "%s rejected by init", s.claim.JID)
				}
				continue
			}
		}
		where := filepath.Join(sp.Dir(spool.Submitted), s.ticket.Name)
		jids := s.jids()
		switch {
		case s.claim == nil && initState != spool.HealthUp:
			fmt.Fprintf(note, "%s: submitted as %s, without a JID yet: init is %s; the job gets its JID when init runs (msched status lists it)\n",
				s.label, where, initState)
		case s.claim == nil:
			fmt.Fprintf(note, "%s: submitted as %s, without a JID yet: init has not taken it within %s; it gets its JID when init does (msched status lists it)\n",
				s.label, where, jidWait)
		case jids == nil:
			fmt.Fprintf(note, "%s: submitted as %s, an array of %d jobs (array: %s); init gives its other jobs their JIDs as it queues them\n",
				s.label, s.claim.JID, s.members, s.job.Array)
			if parsable {
				fmt.Fprintln(out, s.claim.JID)
			}
		case parsable:
			for _, jid := range jids {
				fmt.Fprintln(out, jid)
			}
		case s.job.Array != "":
			fmt.Fprintf(out, "%s: submitted as %s, an array of %d jobs (array: %s): %s\n", s.label, jids[0], len(jids), s.job.Array, jidRanges(jids))
		default:
			fmt.Fprintf(out, "%s: submitted as %s\n", s.label, jids[0])
		}
	}
	return refused
}

// jidRanges writes JIDs with runs of consecutive ones as ranges:
// "J000012-J000111", "J000012, J000077-J000175".
func jidRanges(jids []string) string {
	var parts []string
	for i := 0; i < len(jids); {
		j := i
		for j+1 < len(jids) {
			a, _ := spool.JIDNumber(jids[j])
			b, _ := spool.JIDNumber(jids[j+1])
			if b != a+1 {
				break
			}
			j++
		}
		if j > i {
			parts = append(parts, jids[i]+"-"+jids[j])
		} else {
			parts = append(parts, jids[i])
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// waitPoll is how often --wait looks at its jobs; waitPollMany for more
// than waitMany of them, each a few lstat(2)s a look.
const (
	waitPoll     = 200 * time.Millisecond
	waitPollMany = 2 * time.Second
	waitMany     = 100
	// waitListed: with more jobs than this, --wait prints only those that
	// did not exit 0, and a count.
	waitListed = 20
)

// waitSubmitted waits until every job of subs has ended, prints how each
// ended, and returns the error that carries the first non-zero exit status
// (withCode): the status, 128+N for signal N, exitRefused for a job
// rejected or that never started.
func waitSubmitted(ctx context.Context, cmd *cobra.Command, sp *spool.Spool, parsable bool, subs []*submission) error {
	var order []string
	for _, s := range subs {
		order = append(order, s.jids()...)
	}
	w := cmd.OutOrStdout()
	if parsable {
		w = cmd.ErrOrStderr()
	}
	every := waitPoll
	if len(order) > waitMany {
		every = waitPollMany
	}
	ended := map[string]daemons.Outcome{}
	pending := order
	for len(pending) > 0 {
		st, err := daemons.LookupJobs(ctx, sp, pending)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		rest := pending[:0:0]
		for _, jid := range pending {
			s := st[jid]
			switch {
			case s.Ended:
				ended[jid] = s.Outcome
				if len(order) <= waitListed || !s.Outcome.OK() {
					fmt.Fprintf(w, "%s: %s\n", jid, s.Outcome)
				}
			case s.Missing:
				return codef(exitError, "%s: no longer in the spool nor in its accounting log; cannot tell how it ended", jid)
			default:
				rest = append(rest, jid)
			}
		}
		pending = rest
		if len(pending) == 0 {
			break
		}
		sleepCtx(ctx, every)
		if ctx.Err() != nil {
			break
		}
	}
	if len(pending) > 0 {
		return codef(128+2, "stopped waiting for %s; the jobs go on (msched status %s)", jidRanges(pending), pending[0])
	}
	if len(order) > waitListed {
		ok := 0
		for _, o := range ended {
			if o.OK() {
				ok++
			}
		}
		fmt.Fprintf(w, "%d jobs ended: %d exited with status 0\n", len(order), ok)
	}
	for _, jid := range order {
		o := ended[jid]
		if o.OK() {
			continue
		}
		code, ok := o.ExitCode()
		switch {
		case !ok:
			return codef(exitRefused, "%s %s", jid, o)
		case code == 0:
			return codef(exitError, "%s %s", jid, o)
		}
		return jobStatus(code, "%s %s", jid, o)
	}
	return nil
}
