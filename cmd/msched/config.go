package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/viper"

	"msched/daemons"
	"msched/launch"
	"msched/models"
	"msched/notify"
	"msched/policy"
	"msched/spool"
)

// configKey is one configuration key: its default and what it means. The
// first `msched up` writes every key, with its comment, into
// <spool>/msched.yaml, so a user can see and edit them all; the same text
// is README's configuration table.
type configKey struct {
	Key     string
	Default any
	Doc     string
}

// configKeys lists every key, in the order msched.yaml shows them.
var configKeys = []configKey{
	{"hosts", "", "hosts file (YAML list of name, arch, cluster, address); \"\": <spool>/db/hosts.yaml, written by the first `msched up` with this machine's CPUs"},
	{"models", "", "directory of performance model files (*.yaml); \"\": <spool>/models, where the first `msched up` copies the examples' models"},
	{"hardware", "", "hardware database (architecture speeds); \"\": the built-in one (models/hardware.yaml)"},
	{"policy", "ga-plan", "scheduling policy, one of " + strings.Join(policy.Names(), ", ") + ": ga-plan is the schedule-based GA over the whole queue, ga-xms and ga-ms the MS paper's GA (XMS cost, makespan) over ga.window jobs; README's Policies say what each does"},
	{"ga.population", 60, "individuals in the live GA population (the paper's 60)"},
	{"ga.window", 20, "waiting jobs the GA policies (and fifo, greedy) read, oldest first, in scheduling/; the rest wait in queued/ (the other policies read the whole queue)"},
	{"ga.max_jumps", 7, "times a job may be overtaken by later jobs before it must be placed next (FPFS's MaxJumps); 0: fpfs is fcfs, and the GA policies always place the oldest waiting job first; negative: unbounded"},
	{"ga.time_budget", "10ms", "wall time the GA evolves per decision (~30 generations; the population carries over, and sched replans every second while jobs wait)"},
	{"ga.stall", 10, "in a burst (a decision within 200 ms of the last), stop evolving once the best schedule has not improved for this many generations; -1: always use the whole time budget"},
	{"ga.local_search", 0.0, "share of the MS GA policies' (ga-ms, ga-xms, ga-xms-continuous) offspring improved by the local search (moves off the busiest host, priced from host loads); 0: none"},
	{"ga.seed", 0, "seed of the GA's random choices; 0: a new seed at every start (logged, so a run can be replayed)"},
	{"plan.objective", policy.ObjectiveMixed, "ga-plan's objective over the plan's predicted times: mixed (mean bounded slowdown plus mean wait in hours), wait, bsld or response"},
	{"plan.slack", policy.DefaultSlack.String(), "ga-plan's starvation bound: a job starts no later than its place in the plan when first seen plus this (unless a running job overruns its estimate); -1s: no bound"},
	{"plan.idle_weight", 0.0, "weight of the share of hosts ga-plan's plan leaves idle over its first hour (an XMS-like term); 0: 1 when every host has one speed, not counted otherwise; -1: not counted"},
	{"plan.domain_genes", false, "ga-plan's chromosome also carries each job's host domain (the two-part coding); false: the decoder puts each job on the hosts where it is expected to end first"},
	{"plan.population", policy.DefaultPlanPopulation, "individuals in ga-plan's live population"},
	{"plan.stall", policy.DefaultPlanStall, "ga-plan ends a decision's evolution after this many generations without improvement (within ga.time_budget live); -1: never"},
	{"coalloc.fit", policy.FirstFit.String(), "how fcfs and fpfs give an unordered co-allocated job's components (largest first) their distinct clusters: first (the first cluster, in the hosts file's order, with room) or worst (the cluster with the most free hosts)"},
	{"init.max_job_bytes", spool.MaxJobFile, "largest job file init accepts and msched submit sends, in bytes (1 KiB to 16 MiB); a larger one is rejected, its report quoting only its first 4 KiB"},
	{"run.max_attempts", 3, "starts tried for a job that cannot start before it is rejected"},
	{"run.kill_grace", "10s", "time between SIGTERM and SIGKILL when a job is cancelled or exceeds its walltime"},
	{"run.path", launch.DefaultPath, "PATH of every job's environment (a job file's env: may set another)"},
	{"ssh.binary", "ssh", "the OpenSSH client that reaches ssh:// hosts (jobs and host statistics; always BatchMode)"},
	{"ssh.identity_file", "", "private key the daemons log in with (as root: it must let them log in as every user, e.g. through the hosts' AuthorizedKeysFile); \"\": ssh's default keys"},
	{"ssh.known_hosts_file", "", "known-hosts file of the ssh hosts' keys; set, an unknown or changed host key is refused (StrictHostKeyChecking); \"\": ssh's default"},
	{"ssh.options", []string{}, "further ssh options, e.g. [\"-o\", \"ConnectTimeout=5\"]"},
	{"mpi.mpirun", "mpirun", "Open MPI's mpirun, on the first host of a launch: mpi job"},
	{"mpi.ssh_agent", "", "mpirun's remote shell to the job's other hosts (plm_rsh_agent), e.g. \"ssh -p 2222\"; it logs in with the user's own key; \"\": Open MPI's default"},
	{"slurm.bin_dir", "", "directory of sbatch, scontrol and scancel; \"\": the PATH"},
	{"stats.interval", "5m", "how often the stats daemon samples uptime, load and user idle time of every host"},
	{"rescan", "30s", "how often every daemon rescans its directories besides file-system events"},
	{"web.addr", "127.0.0.1:8080", "address of the status page (`msched web`, `msched up --web`)"},
	{"web.token", "", "access token: whoever logs in with it may cancel and resubmit jobs on the status page; \"\": the page is read-only"},
	{"web.hosts", []string{}, "further names the status page answers to in the Host header, e.g. [\"sched.example.org\"] behind a reverse proxy; web.addr's own name is always allowed (with localhost on loopback; with any IP address on 0.0.0.0); others get 421"},
	{"web.url", "", "the status page's address as users reach it, e.g. https://sched.example.org/msched; set, every mail links the job's page (<web.url>/jobs/<JID>)"},
	{"smtp.host", "", "SMTP server that mails each report to the job's notify address; \"\": reports are only written to <spool>/reports"},
	{"smtp.port", 0, "0: 465 with smtp.tls, 587 with smtp.starttls always, else 25"},
	{"smtp.from", "", "sender of the report mails; \"\": msched@<this host's fully qualified name> (from the resolver; the bare host name if it has none)"},
	{"smtp.username", "", "AUTH user; \"\": no authentication"},
	{"smtp.password", "", "AUTH password (or MSCHED_SMTP_PASSWORD, or smtp.password_file)"},
	{"smtp.password_file", "", "file holding the AUTH password"},
	{"smtp.starttls", "if-offered", "STARTTLS: always (fail and retry if not offered), if-offered, never; a password is never sent in the clear but to localhost"},
	{"smtp.tls", false, "implicit TLS from the first byte (SMTPS, port 465) instead of STARTTLS"},
	{"smtp.timeout", "1m", "bound on one delivery attempt, connect to QUIT"},
	{"smtp.retry", "30s", "wait after a temporary failure (4xx, no answer); doubles after each further one"},
	{"smtp.retry_max", "1h", "longest wait between two attempts"},
	{"smtp.max_attempts", 30, "attempts before a report is given up (logged, and recorded in <spool>/db/mail-failures.jsonl)"},
	{"smtp.max_age", "24h", "a report not delivered this long after its job left is given up"},
	{"mail.when", []string{spool.MailEnd}, "when the user of a job whose file has no mail: list is mailed: any of begin (the job starts), end (it ends) and fail (it ends with a non-zero status, a signal or a reason, or is rejected); []: never"},
	{"mail.domain", "", "mail domain of the users: a job without notify: is mailed to <user>@<domain>; \"\": such a job is not mailed"},
	{"retention.output_age", "720h", "the reaper removes output/<JID>/ of a job that left the spool once nothing in it has changed for this long (720h: 30 days); 0: kept for ever"},
	{"retention.reports_age", "720h", "the reaper removes reports/<JID>.txt this long after it was written; 0: kept for ever"},
	{"retention.accounting_bytes", daemons.DefaultAccountingBytes, "once db/accounting.jsonl or accounting.swf is larger than this (bytes), the reaper rotates both to accounting.jsonl.1 and accounting.swf.1 and starts new logs; 0: never rotated"},
	{"retention.accounting_keep", 3, "rotated accounting logs kept (.1 newest to .N; each rotation deletes those past N); 0: a rotated log is deleted"},
	{"profiler.confidence", 0.95, "confidence level of the historical profiler's Student-t intervals; a job without a performance model is predicted as the top of its interval"},
	{"learning.correct", false, "multiply each model's predictions by the median actual/predicted ratio of its last learning.window completed jobs on the same architecture"},
	{"learning.window", 50, "completed jobs per model and architecture behind the correction (none before 5)"},
	{"log_level", "info", "log level: debug, info, warn, error"},
}

// setDefaults gives every configuration key its default.
func setDefaults(v *viper.Viper) {
	for _, k := range configKeys {
		v.SetDefault(k.Key, k.Default)
	}
}

// defaultConfigFile renders msched.yaml with every key at its default and
// its comment.
func defaultConfigFile() []byte {
	var b bytes.Buffer
	b.WriteString("# msched configuration: every key with its default. Environment variables\n")
	b.WriteString("# MSCHED_<KEY> (dots as underscores, e.g. MSCHED_GA_WINDOW) and command-line\n")
	b.WriteString("# flags override this file. Relative paths are relative to the directory\n")
	b.WriteString("# msched runs in.\n")
	section := ""
	for _, k := range configKeys {
		sec, key := "", k.Key
		if i := bytes.IndexByte([]byte(k.Key), '.'); i >= 0 {
			sec, key = k.Key[:i], k.Key[i+1:]
		}
		indent := ""
		if sec != "" {
			indent = "  "
			if sec != section {
				fmt.Fprintf(&b, "\n%s:\n", sec)
			}
		} else {
			b.WriteString("\n")
		}
		section = sec
		fmt.Fprintf(&b, "%s# %s\n%s%s: %s\n", indent, k.Doc, indent, key, yamlScalar(k.Default))
	}
	return b.Bytes()
}

func yamlScalar(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// config is the configuration as the daemons need it, read once from viper.
type config struct {
	Spool        string
	HostsFile    string // "" before resolve: <spool>/db/hosts.yaml
	HostsGiven   bool   // hosts set by the user: a missing file is an error
	ModelsDir    string
	HardwareFile string
	Policy       string
	Population   int
	Window       int
	MaxJumps     int
	Fit          policy.Fit // coalloc.fit
	TimeBudget   time.Duration
	Stall        int
	LocalSearch  float64
	Plan         policy.PlanOptions // plan.*
	Seed         int64
	MaxJobBytes  int64 // init.max_job_bytes
	MaxAttempts  int
	KillGrace    time.Duration
	StatsEvery   time.Duration
	Rescan       time.Duration
	Web          string
	Learn        learnConfig       // profiler.*, learning.*
	Mail         notify.MailConfig // smtp.*; Host "": mail is off
	RunPath      string            // run.path
	SSH          launch.SSHConfig  // ssh.*
	MPI          launch.MPI        // mpi.*
	SlurmBin     string            // slurm.bin_dir
	Retention    daemons.Retention // retention.*
}

// envName is the environment variable that sets key: MSCHED_GA_WINDOW for
// ga.window (the replacer loadConfig gives viper).
func envName(key string) string {
	return "MSCHED_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// fromEnv is the value of key's environment variable when it sets key
// (viper takes an empty variable as unset).
func fromEnv(key string) (string, bool) {
	s := os.Getenv(envName(key))
	return s, s != ""
}

// keyError is an error about key's value that says where the value came
// from: the variable and its value as written when the environment set
// it, else the configuration file.
func keyError(v *viper.Viper, key string, err error) error {
	if s, ok := fromEnv(key); ok {
		return fmt.Errorf("config: %s=%q: %s: %w", envName(key), s, key, err)
	}
	if f := v.ConfigFileUsed(); f != "" && v.InConfig(key) {
		return fmt.Errorf("config %s: %s: %w", f, key, err)
	}
	return fmt.Errorf("config: %s: %w", key, err)
}

// checkEnv checks, before anything reads them, the MSCHED_* variables that
// set a number or a switch, on the string as written: viper's GetInt takes
// "abc" (and "1e3") as 0, which a later check would report as "must be ≥ 1,
// got 0", naming neither the variable nor what it said.
func checkEnv(v *viper.Viper) error {
	for _, k := range configKeys {
		s, ok := fromEnv(k.Key)
		if !ok {
			continue
		}
		var err error
		switch k.Default.(type) {
		case int, int64:
			if _, perr := strconv.ParseInt(s, 10, 64); perr != nil {
				err = fmt.Errorf("%s is not a whole number", s)
			}
		case float64:
			if f, perr := strconv.ParseFloat(s, 64); perr != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				err = fmt.Errorf("%s is not a number", s)
			}
		case bool:
			if _, perr := strconv.ParseBool(s); perr != nil {
				err = fmt.Errorf("%s is not true or false", s)
			}
		}
		if err != nil {
			return keyError(v, k.Key, err)
		}
	}
	return nil
}

// intKey is key's value as a whole number, read from the value as given
// rather than through GetInt, which takes what it cannot read as 0.
func intKey(v *viper.Viper, key string) (int64, error) {
	switch x := v.Get(key).(type) {
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, keyError(v, key, fmt.Errorf("%q is not a whole number", x))
		}
		return n, nil
	case nil:
		return 0, nil
	default:
		f, err := cast.ToFloat64E(x)
		if err != nil || f != math.Trunc(f) {
			return 0, keyError(v, key, fmt.Errorf("%v is not a whole number", x))
		}
		return int64(f), nil
	}
}

// readConfig reads and checks every key.
func readConfig(v *viper.Viper) (config, error) {
	if err := checkEnv(v); err != nil {
		return config{}, err
	}
	c, err := readKeys(v)
	if err != nil {
		return c, blameEnv(v, err)
	}
	return c, nil
}

// blameEnv rewrites an error "config: KEY: …" about a key that an MSCHED_*
// variable set (the range checks of readKeys, readLearning, readMail) to
// name the variable and its value.
func blameEnv(v *viper.Viper, err error) error {
	msg := err.Error()
	for _, k := range configKeys {
		if rest, ok := strings.CutPrefix(msg, "config: "+k.Key+": "); ok {
			if _, set := fromEnv(k.Key); set {
				return keyError(v, k.Key, errors.New(rest))
			}
		}
	}
	return err
}

// readKeys reads every key and checks its value.
func readKeys(v *viper.Viper) (config, error) {
	c := config{
		Spool:        v.GetString("spool"),
		HostsFile:    v.GetString("hosts"),
		ModelsDir:    v.GetString("models"),
		HardwareFile: v.GetString("hardware"),
		Policy:       v.GetString("policy"),
		LocalSearch:  v.GetFloat64("ga.local_search"),
		Seed:         v.GetInt64("ga.seed"),
		Plan: policy.PlanOptions{
			Objective:   v.GetString("plan.objective"),
			IdleWeight:  v.GetFloat64("plan.idle_weight"),
			DomainGenes: v.GetBool("plan.domain_genes"),
		},
		MaxJobBytes: v.GetInt64("init.max_job_bytes"),
		Web:         v.GetString("web.addr"),
		RunPath:     v.GetString("run.path"),
		SSH: launch.SSHConfig{
			Binary:         v.GetString("ssh.binary"),
			IdentityFile:   v.GetString("ssh.identity_file"),
			KnownHostsFile: v.GetString("ssh.known_hosts_file"),
			Options:        v.GetStringSlice("ssh.options"),
		},
		MPI:      launch.MPI{Mpirun: v.GetString("mpi.mpirun"), Agent: v.GetString("mpi.ssh_agent")},
		SlurmBin: v.GetString("slurm.bin_dir"),
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{
		{"ga.time_budget", &c.TimeBudget},
		{"run.kill_grace", &c.KillGrace},
		{"stats.interval", &c.StatsEvery},
		{"rescan", &c.Rescan},
		{"retention.output_age", &c.Retention.OutputAge},
		{"retention.reports_age", &c.Retention.ReportsAge},
	} {
		s := v.GetString(d.key)
		t, err := time.ParseDuration(s)
		if err != nil || t < 0 {
			return c, fmt.Errorf("config: %s: %q is not a duration like 100ms or 5m", d.key, s)
		}
		*d.dst = t
	}
	var err error
	if c.Fit, err = policy.ParseFit(v.GetString("coalloc.fit")); err != nil {
		return c, fmt.Errorf("config: coalloc.fit: %w", err)
	}
	slack := v.GetString("plan.slack")
	if c.Plan.Slack, err = time.ParseDuration(slack); err != nil {
		return c, fmt.Errorf("config: plan.slack: %q is not a duration like 12h (negative: no bound)", slack)
	}
	if !slices.Contains(policy.Objectives(), c.Plan.Objective) {
		return c, fmt.Errorf("config: plan.objective: %q is not one of %s", c.Plan.Objective, strings.Join(policy.Objectives(), ", "))
	}
	// A stall of 0 would read as "the default" to the policy: refused,
	// saying what is meant (zero).
	const stallZero = "must be ≥ 1 (generations without improvement), or negative (never stop early), got 0"
	for _, n := range []struct {
		key  string
		dst  *int
		min  int64
		zero string // if set, 0 is refused with this
	}{
		{"ga.population", &c.Population, 1, ""}, {"ga.window", &c.Window, 1, ""}, {"plan.population", &c.Plan.Population, 1, ""},
		{"run.max_attempts", &c.MaxAttempts, 1, ""}, {"ga.max_jumps", &c.MaxJumps, math.MinInt32, ""},
		{"ga.stall", &c.Stall, math.MinInt32, stallZero}, {"plan.stall", &c.Plan.Stall, math.MinInt32, stallZero},
	} {
		x, err := intKey(v, n.key)
		if err != nil {
			return c, err
		}
		switch {
		case x < n.min && n.min == 1:
			return c, keyError(v, n.key, fmt.Errorf("must be ≥ 1, got %d", x))
		case x == 0 && n.zero != "":
			return c, keyError(v, n.key, errors.New(n.zero))
		case x < n.min || x > math.MaxInt32:
			return c, keyError(v, n.key, fmt.Errorf("%d is out of range", x))
		}
		*n.dst = int(x)
	}
	if !slices.Contains(policy.Names(), c.Policy) {
		return c, keyError(v, "policy", fmt.Errorf("%q is not one of %s", c.Policy, strings.Join(policy.Names(), ", ")))
	}
	if !(c.LocalSearch >= 0 && c.LocalSearch <= 1) {
		return c, fmt.Errorf("config: ga.local_search: a share of offspring, 0 to 1, got %g", c.LocalSearch)
	}
	c.Retention.AccountingBytes = v.GetInt64("retention.accounting_bytes")
	c.Retention.AccountingKeep = v.GetInt("retention.accounting_keep")
	if c.Retention.AccountingBytes < 0 || c.Retention.AccountingKeep < 0 {
		return c, fmt.Errorf("config: retention.accounting_bytes and retention.accounting_keep must be ≥ 0, got %d and %d",
			c.Retention.AccountingBytes, c.Retention.AccountingKeep)
	}
	if c.MaxJobBytes < spool.MinJobFile || c.MaxJobBytes > spool.MaxJobFileSetting {
		return c, fmt.Errorf("config: init.max_job_bytes: must be %d to %d, got %d", spool.MinJobFile, spool.MaxJobFileSetting, c.MaxJobBytes)
	}
	if c.Spool == "" {
		return c, fmt.Errorf("config: spool: empty")
	}
	c.HostsGiven = c.HostsFile != ""
	if c.HostsFile == "" {
		c.HostsFile = filepath.Join(c.Spool, spool.DirDB, "hosts.yaml")
	}
	if c.ModelsDir == "" {
		c.ModelsDir = filepath.Join(c.Spool, "models")
	}
	if c.Learn, err = readLearning(v); err != nil {
		return c, err
	}
	c.Mail, err = readMail(v)
	return c, err
}

// hardware is the configured hardware database: the file of the hardware
// key, else the built-in one.
func (c config) hardware() (*models.Hardware, error) {
	if c.HardwareFile == "" {
		return models.DefaultHardware(), nil
	}
	return models.LoadHardware(c.HardwareFile)
}
