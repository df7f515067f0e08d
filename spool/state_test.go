package spool

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestSpool_MoveTable(t *testing.T) {
	for _, from := range States {
		for _, to := range States {
			legal := Legal(from, to) == nil
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				s := newSpool(t)
				j := place(t, s, from)
				before := len(j.History)
				err := s.Move(j, from, to, "walk")
				if !legal {
					if err == nil {
						t.Fatalf("illegal move %s → %s succeeded", from, to)
					}
					if !strings.Contains(err.Error(), string(from)) || !strings.Contains(err.Error(), string(to)) ||
						!strings.HasPrefix(err.Error(), "spool: ") {
						t.Errorf("error %q does not name both states", err)
					}
					if j.State() != from || len(j.History) != before {
						t.Errorf("refused move changed the job: state %s, history %d→%d", j.State(), before, len(j.History))
					}
					if from != Submitted {
						if got := where(t, s, j.JID); len(got) != 1 || got[0] != from {
							t.Errorf("after refused move job is in %v, want [%s]", got, from)
						}
					}
					return
				}
				if err != nil {
					t.Fatalf("legal move %s → %s: %v", from, to, err)
				}
				if got := where(t, s, j.JID); len(got) != 1 || got[0] != to {
					t.Fatalf("after move job is in %v, want [%s]", got, to)
				}
				r, err := s.Read(to, j.JID)
				if err != nil {
					t.Fatal(err)
				}
				last := r.History[len(r.History)-1]
				if len(r.History) != before+1 || last.State != to || last.Note != "walk" {
					t.Errorf("history on disk = %+v, want %d entries ending in {%s walk}", r.History, before+1, to)
				}
				if j.State() != to || j.File() != j.JID {
					t.Errorf("job now says state %q file %q", j.State(), j.File())
				}
				if js := junk(t, s); len(js) > 0 {
					t.Errorf("left behind: %v", js)
				}
			})
		}
	}
}

func TestSpool_TransitionsAreOwnedMoves(t *testing.T) {
	seen := map[[2]State]bool{}
	for _, tr := range Transitions {
		if tr.By != Owner(tr.From) {
			t.Errorf("%s → %s is done by %s, but %s is owned by %s", tr.From, tr.To, tr.By, tr.From, Owner(tr.From))
		}
		if removable(tr.From) {
			t.Errorf("%s → %s: nothing leaves a terminal state except by removal", tr.From, tr.To)
		}
		k := [2]State{tr.From, tr.To}
		if seen[k] {
			t.Errorf("%s → %s listed twice", tr.From, tr.To)
		}
		seen[k] = true
	}
	if Legal(Running, Rejected) == nil {
		t.Error("running → rejected must stay illegal: a started job ends via finished (doc.go)")
	}
	for _, st := range States {
		if Owner(st) == "" {
			t.Errorf("state %s has no owner", st)
		}
	}
}

// The move table in doc.go must say exactly what Transitions says.
func TestSpool_DocMirrorsTable(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var rows []Transition
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		body := strings.TrimPrefix(line, "//\t")
		switch {
		case strings.HasPrefix(body, "from ") && strings.Contains(body, " why"):
			in = true
		case in && body == line: // the table ends at the first non-tab comment line
			in = false
		case in:
			f := strings.Fields(body)
			if len(f) < 4 {
				t.Fatalf("bad table row %q", line)
			}
			why := strings.TrimSpace(body[strings.Index(body, " "+f[2]+" ")+len(f[2])+2:])
			rows = append(rows, Transition{State(f[0]), State(f[1]), Daemon(f[2]), why})
		}
	}
	if len(rows) != len(Transitions) {
		t.Fatalf("doc.go lists %d moves, Transitions %d", len(rows), len(Transitions))
	}
	for i := range rows {
		if rows[i] != Transitions[i] {
			t.Errorf("row %d: doc.go %+v, code %+v", i, rows[i], Transitions[i])
		}
	}
}

func TestSpool_CreateIsIdempotentAndOpenChecks(t *testing.T) {
	dir := t.TempDir() + "/sp"
	if _, err := Open(dir); err == nil {
		t.Fatal("Open of a missing spool succeeded")
	}
	s, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	j := place(t, s, Queued)
	if _, err := Create(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(Queued, j.JID); err != nil {
		t.Fatalf("Create again lost a job: %v", err)
	}
	for _, d := range layout() {
		want := os.FileMode(DirPerm)
		if os.Geteuid() == 0 {
			want = layoutMode(d) // TestCreate_Modes
		}
		fi, err := os.Stat(s.root + "/" + d)
		if err != nil || fi.Mode()&(os.ModePerm|os.ModeSticky) != want {
			t.Errorf("%s: %v %v, want %v", d, fi.Mode(), err, want)
		}
	}
	if err := os.Remove(s.Path(DirControl)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "control") {
		t.Errorf("Open with control/ missing: %v", err)
	}
}

// The table of states and owners in doc.go must say what States and Owner
// say, in order (it once gave finished/ to run while Owner gave it to
// sched).
func TestSpool_DocMirrorsOwners(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var states []State
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		body := strings.TrimPrefix(line, "//\t")
		switch f := strings.Fields(body); {
		case len(f) >= 2 && f[0] == "state" && f[1] == "owner":
			in = true
		case in && body == line:
			in = false
		case in:
			if len(f) < 3 {
				t.Fatalf("bad table row %q", line)
			}
			st := State(f[0])
			states = append(states, st)
			if Owner(st) != Daemon(f[1]) {
				t.Errorf("doc.go: %s owned by %s; Owner says %q", st, f[1], Owner(st))
			}
		}
	}
	if !slices.Equal(states, States) {
		t.Errorf("doc.go lists the states %v, States %v", states, States)
	}
}
