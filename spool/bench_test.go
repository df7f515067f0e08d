package spool

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkMove measures one Move between daemon-owned states with every
// fsync in place: the per-step file-system cost of the live system. A job
// makes at most five moves (submitted → queued → scheduling → runnable →
// running → finished), so 200 jobs/s needs ~1000 moves/s across all
// daemons.
func BenchmarkMove(b *testing.B) {
	s := newSpool(b)
	j := place(b, s, Queued)
	j.History = j.History[:1] // keep the file a constant size
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		from, to := Queued, Scheduling
		if i%2 == 1 {
			from, to = Scheduling, Queued
		}
		if err := s.Move(j, from, to, ""); err != nil {
			b.Fatal(err)
		}
		j.History = j.History[:1]
	}
}

// BenchmarkMoveParallel runs Moves of different jobs from several goroutines,
// as the daemons do: the file system batches their journal commits.
func BenchmarkMoveParallel(b *testing.B) {
	for _, workers := range []int{2, 6} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			s := newSpool(b)
			jobs := make(chan *Job, workers)
			for w := 0; w < workers; w++ {
				j := place(b, s, Queued)
				j.History = j.History[:1]
				jobs <- j
			}
			b.SetParallelism(workers) // × GOMAXPROCS goroutines; jobs limits to `workers` at once
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					j := <-jobs
					to := Scheduling
					if j.State() == Scheduling {
						to = Queued
					}
					if err := s.Move(j, j.State(), to, ""); err != nil {
						b.Error(err)
					}
					j.History = j.History[:1]
					jobs <- j
				}
			})
		})
	}
}

// BenchmarkJobLifecycle runs a whole job through the spool: submit, claim,
// parse, and the five moves. Its ns/op is the spool's share of one job.
func BenchmarkJobLifecycle(b *testing.B) {
	s := newSpool(b)
	path := []State{Queued, Scheduling, Runnable, Running, Finished}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name, err := s.Submit("job.yaml", []byte(validJob))
		if err != nil {
			b.Fatal(err)
		}
		c, err := s.Claim(name)
		if err != nil {
			b.Fatal(err)
		}
		j, err := c.Job()
		if err != nil {
			b.Fatal(err)
		}
		from := Submitted
		for _, to := range path {
			if err := s.Move(j, from, to, ""); err != nil {
				b.Fatal(err)
			}
			from = to
		}
		if err := s.Remove(j); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	data := []byte(validJob)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Parse("job.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshal encodes a running job as a daemon's Move does: "plain"
// has no control character in any string (the common case), "newline" has
// one in its reason, which takes the path that checks the output reads
// back.
func BenchmarkMarshal(b *testing.B) {
	j, err := Parse("job.yaml", []byte(validJob))
	if err != nil {
		b.Fatal(err)
	}
	uid, at := 1001, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j.JID, j.User, j.UID, j.SubmittedAt = "J000000000042", "alice", &uid, at
	for _, st := range []State{Submitted, Queued, Scheduling, Runnable, Running} {
		j.History = append(j.History, Event{State: st, At: at})
	}
	j.Schedule = &Schedule{Hosts: []string{"a/cpu0", "a/cpu1"}, PredictedSeconds: 120, DecidedAt: at, Policy: "ga-xms"}
	j.Run = &RunInfo{StartedAt: at, PID: 4242, PGID: 4242, Attempts: 1, Host: "a/cpu0"}
	newline := j.Clone()
	newline.Reason = "launch failed:\nexec: no such file"
	for _, c := range []struct {
		name string
		j    *Job
	}{{"plain", j}, {"newline", newline}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.j.Marshal(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
