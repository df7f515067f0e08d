package web

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"msched/acct"
	"msched/daemons"
	"msched/evaluator"
	"msched/hoststat"
	"msched/spool"
)

// fixture describes a realistic spool for tests: jobs in every state with
// the sections the daemons add, a published schedule with running and
// planned jobs, host samples, an accounting log and sched's counters. The
// db/ files are written with the daemons' own types, so a change of their
// format breaks these tests rather than the page.
type fixture struct {
	Jobs  int // total job files, spread over the states as shares below
	Hosts int
	Now   time.Time
	// Evil gives every job the name <script>alert(1)</script>.
	Evil bool
}

// stateShare spreads jobs over the states roughly as a busy system has
// them: most waiting, a host's worth running, many done not yet reaped.
var stateShare = []struct {
	st    spool.State
	share float64
}{
	{spool.Submitted, 0.04}, {spool.Queued, 0.40}, {spool.Scheduling, 0.02}, {spool.Runnable, 0.01},
	{spool.Running, 0.07}, {spool.Finished, 0.31}, {spool.Rejected, 0.15},
}

var jobNames = []string{"particles", "sweep3d", "fft-2048", "cfd-wing", "render", "lu-decomp", "nbody", "bioseq"}

type built struct {
	sp      *spool.Spool
	hosts   []hoststat.Host
	byState map[spool.State][]string // JIDs (file names in submitted/)
	running []string                 // JIDs in the schedule as running
	planned []string
}

func (f fixture) build(tb testing.TB) built {
	tb.Helper()
	dir := tb.TempDir()
	sp, err := spool.Create(dir)
	if err != nil {
		tb.Fatal(err)
	}
	b := built{sp: sp, byState: map[spool.State][]string{}}
	for i := 0; i < f.Hosts; i++ {
		arch := []string{"SunUltra10", "SunUltra5", "Pentium-III-800"}[i%3]
		b.hosts = append(b.hosts, hoststat.Host{Name: fmt.Sprintf("node%02d", i), Arch: arch, Cluster: fmt.Sprintf("c%d", i/16)})
	}
	if err := hoststat.WriteHosts(filepath.Join(dir, "db", "hosts.yaml"), b.hosts); err != nil {
		tb.Fatal(err)
	}
	now := f.Now
	n := 0
	nextHost := 0
	var running []spool.PublishedJob
	for si, s := range stateShare {
		count := int(float64(f.Jobs)*s.share + 0.5)
		if si == len(stateShare)-1 {
			count = f.Jobs - n
		}
		for k := 0; k < count; k++ {
			n++
			jid := spool.FormatJID(int64(n))
			name := jobNames[n%len(jobNames)]
			if f.Evil {
				name = "<script>alert(1)</script>"
			}
			sub := now.Add(-time.Duration(f.Jobs-n+60) * 20 * time.Second)
			j := &spool.Job{Name: name, Command: []string{"./" + jobNames[n%len(jobNames)], "-n", fmt.Sprint(1000 * n)},
				Workdir: "/home/alice/run", Notify: "alice@example.org",
				Hosts: &spool.Hosts{Min: 1, Max: 1 + n%4}, Model: &spool.Model{Name: jobNames[n%len(jobNames)], Params: map[string]float64{"N": float64(1000 * n)}}}
			if s.st == spool.Submitted {
				data, _ := j.Marshal()
				if err := spool.WriteAtomic(sp.Dir(spool.Submitted), fmt.Sprintf("job%d.yaml", n), data); err != nil {
					tb.Fatal(err)
				}
				b.byState[s.st] = append(b.byState[s.st], fmt.Sprintf("job%d.yaml", n))
				continue
			}
			j.JID, j.User, j.UID, j.SubmittedAt = jid, "alice", ptr(fixtureUID), sub
			j.History = []spool.Event{{State: spool.Queued, At: sub}}
			at := sub
			step := func(st spool.State, d time.Duration, note string) {
				at = at.Add(d)
				j.History = append(j.History, spool.Event{State: st, At: at, Note: note})
			}
			pred := float64(60 + 37*(n%11))
			hosts := []string{b.hosts[nextHost%f.Hosts].Name}
			switch s.st {
			case spool.Scheduling:
				step(spool.Scheduling, time.Second, "")
			case spool.Runnable, spool.Running, spool.Finished:
				step(spool.Scheduling, time.Second, "")
				step(spool.Runnable, 2*time.Second, "placed by ga-xms")
				j.Schedule = &spool.Schedule{Hosts: hosts, PredictedSeconds: pred, DecidedAt: at, Policy: "ga-xms"}
				if s.st == spool.Runnable {
					break
				}
				step(spool.Running, 300*time.Millisecond, "")
				j.Run = &spool.RunInfo{StartedAt: at, Attempts: 1, Host: hosts[0], PID: 1000 + n}
				if s.st == spool.Running {
					// Running now: started a little before now.
					start := now.Add(-time.Duration(n%7+1) * 20 * time.Second)
					j.Run.StartedAt = start
					j.History[len(j.History)-1].At = start
					nextHost++
					running = append(running, spool.PublishedJob{JID: jid, Name: name, State: "running", Hosts: hosts,
						Start: start, End: start.Add(time.Duration(pred * float64(time.Second))), PredictedSeconds: pred})
					break
				}
				actual := pred * (0.7 + 0.06*float64(n%10))
				step(spool.Finished, time.Duration(actual*float64(time.Second)), "exit 0")
				j.Run.EndedAt, j.Run.ExitStatus = at, ptr(0)
			case spool.Rejected:
				step(spool.Rejected, time.Second, "cancelled")
				j.Reason = "cancelled"
			}
			data, err := j.Marshal()
			if err != nil {
				tb.Fatal(err)
			}
			if err := spool.WriteAtomic(sp.Dir(s.st), jid, data); err != nil {
				tb.Fatal(err)
			}
			b.byState[s.st] = append(b.byState[s.st], jid)
		}
	}
	// The schedule: the running jobs, then planned ones from queued/ (the
	// GA's window), each after the end of the previous job on its host.
	pub := spool.PublishedSchedule{GeneratedAt: now, Policy: "ga-xms"}
	for _, h := range b.hosts {
		pub.Hosts = append(pub.Hosts, spool.PublishedHost{Name: h.Name, Arch: h.Arch, Cluster: h.Cluster, Load: 0.1})
	}
	free := map[string]time.Time{}
	for _, r := range running {
		pub.Jobs = append(pub.Jobs, r)
		b.running = append(b.running, r.JID)
		if r.End.After(free[r.Hosts[0]]) {
			free[r.Hosts[0]] = r.End
		}
	}
	for i, jid := range b.byState[spool.Queued] {
		if i >= 2*f.Hosts || i >= 40 {
			break
		}
		width := 1 + i%3
		var hs []string
		start := now
		for w := 0; w < width; w++ {
			h := b.hosts[(i*5+w*7)%f.Hosts].Name
			hs = append(hs, h)
			if free[h].After(start) {
				start = free[h]
			}
		}
		pred := float64(90 + 45*(i%6))
		end := start.Add(time.Duration(pred) * time.Second)
		for _, h := range hs {
			free[h] = end
		}
		name := jobNames[(i+3)%len(jobNames)]
		if f.Evil {
			name = "<script>alert(1)</script>"
		}
		pub.Jobs = append(pub.Jobs, spool.PublishedJob{JID: jid, Name: name, State: "planned", Hosts: hs,
			Start: start, End: end, PredictedSeconds: pred})
		b.planned = append(b.planned, jid)
	}
	data, err := json.MarshalIndent(pub, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	if err := spool.WriteAtomic(sp.Path(spool.DirDB), spool.ScheduleFile, data); err != nil {
		tb.Fatal(err)
	}
	// Host samples.
	st, err := hoststat.OpenStore(sp.Path(spool.DirDB), 0)
	if err != nil {
		tb.Fatal(err)
	}
	for i, h := range b.hosts {
		idle := float64(-1)
		if i%4 == 0 {
			idle = float64(30 * i)
		}
		if err := st.Record(h.Name, hoststat.Stats{Time: now.Add(-time.Minute), Uptime: 86400 * float64(1+i), Load1: 0.05 * float64(i%20),
			Load5: 0.04 * float64(i%20), Load15: 0.03 * float64(i%20), Idle: idle, NCPU: 1}); err != nil {
			tb.Fatal(err)
		}
	}
	st.Close()
	// The accounting log: the reaped jobs that came before.
	var lines []byte
	for i := 0; i < 60; i++ {
		pred := float64(100 + 10*i)
		act := pred * (0.8 + 0.015*float64(i%20))
		exe := "./" + jobNames[i%len(jobNames)]
		name := jobNames[i%len(jobNames)]
		if f.Evil {
			name = "<script>alert(1)</script>"
		}
		r := acct.Record{JID: spool.FormatJID(int64(100000 + i)), Name: name, User: "alice",
			Executable: exe, Hosts: []string{b.hosts[i%f.Hosts].Name}, PredictedSeconds: &pred, ActualSeconds: &act,
			State: "exited", ExitStatus: ptr(0), SubmittedAt: now.Add(-2 * time.Hour), StartedAt: now.Add(-time.Hour),
			EndedAt: now.Add(-time.Hour + time.Duration(act)*time.Second)}
		line, _ := json.Marshal(r)
		lines = append(append(lines, line...), '\n')
	}
	if err := os.WriteFile(filepath.Join(sp.Path(spool.DirDB), acct.JSONL), lines, 0o644); err != nil {
		tb.Fatal(err)
	}
	jidsGiven(tb, sp, spool.FormatJID(int64(max(n, 100000+59))))
	gens := int64(12345)
	if err := daemons.WriteSchedStats(sp, daemons.SchedStats{GeneratedAt: now, StartedAt: now.Add(-10 * time.Minute),
		Evaluator: evaluator.Stats{Lookups: 1000, L1Hits: 700, L2Hits: 200, Misses: 100, ModelCalls: 100}, Generations: &gens}); err != nil {
		tb.Fatal(err)
	}
	return b
}

// handlerFor serves a built fixture at a fixed now.
// cancelRequested reports whether control/ holds a cancel request for jid
// (its file is named by the sender's uid: spool.RequestCancel).
func cancelRequested(t testing.TB, sp *spool.Spool, jid string) bool {
	t.Helper()
	cs, err := sp.Controls()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.JID == jid && c.Kind == spool.Cancel && c.Junk == "" {
			return true
		}
	}
	return false
}

// fixtureUID is the owner of the fixture's jobs: a uid no one has, so that
// what is given to it is given away.
const fixtureUID = 12345

func handlerFor(b built, now time.Time, token string) *handler {
	return New(Config{Spool: b.sp, HostsFile: filepath.Join(b.sp.Path(spool.DirDB), "hosts.yaml"), Token: token,
		Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)}).(*handler)
}

func TestFormatsMatchDaemons(t *testing.T) {
	if acct.JSONL != acct.JSONL || schedStatsFile != daemons.SchedStatsFile {
		t.Fatalf("db/ file names differ from the daemons': web %s %s, daemons %s %s", acct.JSONL, schedStatsFile, acct.JSONL, daemons.SchedStatsFile)
	}
}
