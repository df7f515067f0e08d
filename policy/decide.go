package policy

import (
	"context"
	"slices"
	"time"
)

// The one policy path. The sched daemon builds a Snapshot from the spool,
// the simulator from its simulated state; both hand it to a Decider, which
// applies the same rules around the policy call, so that what is measured
// offline is what runs live.

// OverrunMargin is how far after now a running job that has run past its
// predicted end is shown to end (ShowOverruns): its hosts are busy now, as
// the job still runs, and it may end at any moment. One second: trace times
// are whole seconds, and the live sched replans every second while jobs
// wait, so a job shown ending within the margin is seen again by then.
const OverrunMargin = time.Second

// ShowOverruns is the overrun rule: it returns s with every running job
// whose predicted End is before s.Now+margin shown ending at s.Now+margin,
// and each of its hosts free no earlier. s's own slices are left as they
// are (the simulator keeps its snapshot's from one decision to the next):
// when a job has overrun, the result has copies of Running and Hosts.
func ShowOverruns(s Snapshot, margin time.Duration) Snapshot {
	var o overruns
	var x hostIndex
	x.update(s.Hosts)
	return o.show(s, margin, &x)
}

// overruns is ShowOverruns with its copies kept from one call to the next
// (a Decider's): the simulator makes ~10,000 decisions a trace, and while
// a job overruns each one shows it.
type overruns struct {
	running []RunningJob
	hosts   []Host
}

// show is ShowOverruns, with x the index of s's hosts. The result's slices
// are o's until the next call.
func (o *overruns) show(s Snapshot, margin time.Duration, x *hostIndex) Snapshot {
	end := s.Now.Add(margin)
	first := slices.IndexFunc(s.Running, func(r RunningJob) bool { return r.End.Before(end) })
	if first < 0 {
		return s
	}
	o.running = append(o.running[:0], s.Running...)
	o.hosts = append(o.hosts[:0], s.Hosts...)
	for i := first; i < len(o.running); i++ {
		r := &o.running[i]
		if !r.End.Before(end) {
			continue
		}
		r.End = end
		for _, name := range r.Hosts {
			if k, ok := x.of[name]; ok && o.hosts[k].FreeAt.Before(end) {
				o.hosts[k].FreeAt = end
			}
		}
	}
	s.Running, s.Hosts = o.running, o.hosts
	return s
}

// Head returns the head of queue that p reads: its first p.Reads() jobs, or
// the whole queue when Reads is 0 or the queue is no longer.
func Head(p Policy, queue []QueuedJob) []QueuedJob {
	if n := p.Reads(); n > 0 && n < len(queue) {
		return queue[:n]
	}
	return queue
}

// A Decider is the one policy path: the sched daemon and the simulator each
// keep one for their policy and hand it every snapshot they build. Decide
//
//  1. shows overrunning jobs ending OverrunMargin after now (ShowOverruns),
//  2. cuts the queue to the head the policy reads (Head),
//  3. when the hosts are in several clusters, keeps each job inside one
//     (OneCluster; the Decider remembers the clusters it gave),
//  4. asks the policy for its plan, and
//  5. checks the plan (Check).
//
// The caller acts on the decision: the sched daemon refuses the faulty parts
// (Plan.Without) and logs them; the simulator fails the run, as a simulated
// policy that makes a bad plan is a bug. A Decider is used by one goroutine.
type Decider struct {
	Policy Policy
	pins   map[string]string // the cluster OneCluster gave each waiting job
	hosts  hostIndex
	over   overruns
	check  checker
}

// Decision is one pass of the path.
type Decision struct {
	// Snapshot is what the policy read: the snapshot after steps 1 to 3.
	// Its slices may be the Decider's, reused by the next Decide.
	Snapshot Snapshot
	// Plan is the policy's plan, with OneCluster's rejections (jobs no one
	// cluster can hold; the policy never saw them) after its own in Reject.
	Plan Plan
	// Faults are the parts of Plan that Check refuses, in plan order.
	Faults []Fault
}

// Decide runs the path on s; see Decider. s's slices are left as they are.
// On a policy error the Decision holds the snapshot the policy read.
func (d *Decider) Decide(ctx context.Context, s Snapshot) (Decision, error) {
	d.hosts.update(s.Hosts)
	s = d.over.show(s, OverrunMargin, &d.hosts)
	s.Queue = Head(d.Policy, s.Queue)
	var unfit []Rejection
	if d.hosts.many {
		s, d.pins, unfit = OneCluster(s, d.pins)
	} else {
		d.pins = nil
	}
	plan, err := d.Policy.Plan(ctx, s)
	if err != nil {
		return Decision{Snapshot: s}, err
	}
	dec := Decision{Snapshot: s, Plan: plan, Faults: d.check.check(s, plan, &d.hosts)}
	if len(unfit) > 0 {
		// Clip: the policy's Reject may share an array it reuses.
		dec.Plan.Reject = append(slices.Clip(plan.Reject), unfit...)
	}
	return dec, nil
}
