package spool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/atomicfile"
)

const validJob = `name: particles
command: ["./AppParticles", "-n", "20000"]
workdir: /home/alice/particles
notify: alice@example.org
hosts: {min: 1, max: 16}
model: {name: particles, params: {N: 20000}}
walltime: 2h
stdout: out.txt
`

func newSpool(t testing.TB) *Spool {
	t.Helper()
	s, err := Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// submitAndClaim submits data as name and claims it, as init does.
func submitAndClaim(t testing.TB, s *Spool, name, data string) (*Claim, *Job) {
	t.Helper()
	ticket, err := s.Submit(name, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ticket)
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.Job()
	if err != nil {
		t.Fatal(err)
	}
	return c, j
}

// place puts a job directly into state st (history ending in st) and reads
// it back, as its owner would find it. For Submitted it goes through
// Submit and Claim.
func place(t testing.TB, s *Spool, st State) *Job {
	t.Helper()
	if st == Submitted {
		_, j := submitAndClaim(t, s, "job.yaml", validJob)
		return j
	}
	j, err := Parse("job.yaml", []byte(validJob))
	if err != nil {
		t.Fatal(err)
	}
	if j.JID, err = s.NextJID(); err != nil {
		t.Fatal(err)
	}
	j.User, j.SubmittedAt = "alice", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j.History = []Event{{State: Submitted, At: j.SubmittedAt}}
	if st != Queued {
		j.History = append(j.History, Event{State: Queued, At: j.SubmittedAt})
	}
	j.History = append(j.History, Event{State: st, At: j.SubmittedAt})
	writeJob(t, s, st, j)
	r, err := s.Read(st, j.JID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func writeJob(t testing.TB, s *Spool, st State, j *Job) {
	t.Helper()
	b, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(s.Dir(st), j.JID, b); err != nil {
		t.Fatal(err)
	}
}

// where lists the states whose directory holds jid.
func where(t testing.TB, s *Spool, jid string) []State {
	t.Helper()
	var in []State
	for _, st := range States {
		if _, err := os.Lstat(filepath.Join(s.Dir(st), jid)); err == nil {
			in = append(in, st)
		}
	}
	return in
}

// junk lists files left in tmp/ and dot-files anywhere in the layout.
func junk(t testing.TB, s *Spool) []string {
	t.Helper()
	var out []string
	for _, d := range layout() {
		es, err := os.ReadDir(filepath.Join(s.root, d))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if d == DirTmp && e.IsDir() {
				staged, _ := os.ReadDir(filepath.Join(s.root, d, e.Name())) // tmp/<daemon>/
				for _, f := range staged {
					if !strings.HasPrefix(f.Name(), atomicfile.PoolPrefix) { // the daemon's pool: not junk
						out = append(out, filepath.Join(d, e.Name(), f.Name()))
					}
				}
				continue
			}
			if d == DirTmp || e.Name()[0] == '.' {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}
