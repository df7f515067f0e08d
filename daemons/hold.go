package daemons

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"msched/spool"
)

// Holding: sched keeps some waiting jobs out of its policy's queue, as
// holdBack keeps those that only down hosts could run, and says why in the
// schedule it publishes (spool.PublishedSchedule.Held, read with
// HeldReason):
//
//   - a job with dependencies (after:, afterok:) until they are met: every
//     job of after: has ended, however, and every job of afterok: has
//     exited with status 0 (Outcome.OK). It is rejected, with the reason,
//     when they can never be: a job of afterok: ended otherwise, a
//     dependency submitted after the job itself (the rule that makes a
//     cycle of dependencies impossible), or one that is nowhere
//     (LookupJobs: not claimed, in no state, not in the accounting log)
//     for missingGrace. A cycle looks in the spool for each job's
//     dependencies as it judges it, and in the accounting log once, after
//     judging every job, for all the dependencies it found in no directory
//     (resolve); if it looked, the jobs are judged again;
//   - the members of an array with a limit (array: "1-100%10") beyond it:
//     members placed or running (runnable/, running/) and members the
//     policy reads count against it, the lowest-numbered first.
//
// A held job stays in queued/ (one in scheduling/ is evicted to queued/)
// and counts as waiting, so sched looks again at every replan tick; a
// dependency ending wakes it sooner when it leaves running/.

// missingGrace is how long a dependency may be nowhere before the job
// waiting for it is rejected: a JID is allocated an instant before its
// claim appears in tmp/, so a job found nowhere once may be one being
// claimed; found nowhere for this long, it is none.
var missingGrace = 5 * time.Second

// holds is what sched keeps across cycles about holding: the outcomes of
// dependencies that have ended (they never change) and since when each
// missing dependency has been missing.
type holds struct {
	ended   map[string]Outcome
	missing map[string]time.Time
}

// holdCycle is one cycle's holding.
type holdCycle struct {
	ctx    context.Context
	now    time.Time
	sp     *spool.Spool
	h      *holds
	active func() map[string]int // members of each array placed or running
	// status is this cycle's lookups of dependencies that have not ended.
	status map[string]JobStatus
	// claims are init's claims, read by the first lookup that needs them
	// and kept for the cycle's others (and its second pass, again).
	claims *claims
	// gone are the dependencies found in no spool directory that the
	// accounting log is still to be read for (resolve).
	gone   map[string]bool
	counts map[string]int // array → members placed or running (active), read when first needed
	read   map[string]int // array → members the policy reads this cycle
	deps   map[string][]string
	arrays map[string]*spool.PublishedHold
	// rejects are the jobs whose dependencies can never be met, with why.
	rejects []heldReject
	named   map[string]bool // the dependencies judged this cycle
	err     error           // the first failed lookup, logged once
}

type heldReject struct {
	j      *spool.Job
	reason string
}

func (h *holds) cycle(ctx context.Context, now time.Time, sp *spool.Spool, active func() map[string]int) *holdCycle {
	if h.ended == nil {
		h.ended, h.missing = map[string]Outcome{}, map[string]time.Time{}
	}
	return &holdCycle{ctx: ctx, now: now, sp: sp, h: h, active: active, status: map[string]JobStatus{}, claims: new(claims),
		gone: map[string]bool{}, read: map[string]int{}, deps: map[string][]string{}, arrays: map[string]*spool.PublishedHold{}, named: map[string]bool{}}
}

// judge says whether j, a waiting job, is held back this cycle (hold: why)
// or is to be rejected (rejected: it is added to rejects). Jobs are judged
// oldest first; admit each job the policy then reads.
func (c *holdCycle) judge(j *spool.Job) (hold string, rejected bool) {
	if why, reject := c.dependencies(j); reject {
		c.rejects = append(c.rejects, heldReject{j, why})
		return why, true
	} else if why != "" {
		c.deps[why] = append(c.deps[why], j.JID)
		return why, false
	}
	if j.ArrayJob == "" {
		return "", false
	}
	limit := spool.ArrayLimit(j.Array)
	if limit == 0 {
		return "", false
	}
	if c.counts == nil {
		c.counts = c.active()
	}
	running := c.counts[j.ArrayJob]
	if running+c.read[j.ArrayJob] < limit {
		return "", false
	}
	a := c.arrays[j.ArrayJob]
	if a == nil {
		a = &spool.PublishedHold{ArrayJob: j.ArrayJob, From: j.JID,
			Reason: fmt.Sprintf("array %s: at most %d of its jobs at once (%d placed or running)", j.ArrayJob, limit, running)}
		c.arrays[j.ArrayJob] = a
	}
	return a.Reason, false
}

// admit counts j, which the policy reads, against its array's limit.
func (c *holdCycle) admit(j *spool.Job) {
	if j.ArrayJob != "" {
		c.read[j.ArrayJob]++
	}
}

// dependencies is why j waits for its dependencies ("" when they are
// met), and whether they can never be met (then why is the reason it is
// rejected with).
func (c *holdCycle) dependencies(j *spool.Job) (why string, never bool) {
	after, afterOK := j.Dependencies()
	if len(after)+len(afterOK) == 0 {
		return "", false
	}
	own, _ := spool.JIDNumber(j.JID)
	var unknown []string
	for _, dep := range append(afterOK[:len(afterOK):len(afterOK)], after...) {
		c.named[dep] = true
		if n, _ := spool.JIDNumber(dep); n >= own {
			return fmt.Sprintf("dependency %s is not older than this job (%s): a job can wait only for jobs submitted before it", dep, j.JID), true
		}
		if _, ok := c.h.ended[dep]; !ok {
			if _, ok := c.status[dep]; !ok {
				unknown = append(unknown, dep)
			}
		}
	}
	if len(unknown) > 0 {
		st, gone, err := lookupSpool(c.sp, c.claims, unknown)
		if err != nil {
			if c.err == nil {
				c.err = err
			}
			return "waiting for its dependencies (cannot look them up: " + err.Error() + ")", false
		}
		for _, jid := range gone {
			// Nowhere in the spool: to be looked for in the log (resolve)
			// and waited for meanwhile.
			c.gone[jid] = true
			st[jid] = JobStatus{}
		}
		for jid, s := range st {
			c.note(jid, s)
		}
	}
	var waitFor []string
	for i, dep := range append(afterOK[:len(afterOK):len(afterOK)], after...) {
		ok := i < len(afterOK)
		if o, ended := c.h.ended[dep]; ended {
			if ok && !o.OK() {
				return fmt.Sprintf("afterok: %s %s; it had to exit with status 0", dep, o), true
			}
			continue
		}
		if s := c.status[dep]; s.Missing && c.now.Sub(c.h.missing[dep]) >= missingGrace {
			return fmt.Sprintf("dependency %s: no such job (not in the spool, nor in its accounting log)", dep), true
		}
		waitFor = append(waitFor, dep)
	}
	if len(waitFor) == 0 {
		return "", false
	}
	const shown = 3
	why = "waiting for " + strings.Join(waitFor[:min(len(waitFor), shown)], ", ")
	if len(waitFor) > shown {
		why += fmt.Sprintf(" and %d more", len(waitFor)-shown)
	}
	return why, false
}

// published is what this cycle held, for the schedule sched publishes.
func (c *holdCycle) published() []spool.PublishedHold {
	var out []spool.PublishedHold
	for why, jids := range c.deps {
		out = append(out, spool.PublishedHold{Reason: why, JIDs: jids})
	}
	for _, a := range c.arrays {
		out = append(out, *a)
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a].From, out[b].From
		if len(out[a].JIDs) > 0 {
			x = out[a].JIDs[0]
		}
		if len(out[b].JIDs) > 0 {
			y = out[b].JIDs[0]
		}
		return spool.JIDLess(x, y)
	})
	return out
}

// resolve looks for the dependencies this cycle found in no spool
// directory (gone) in the accounting log, in one read for all of them:
// those there have ended; the others are missing (since now, if they were
// not already). It reports whether it looked: the jobs are then to be
// judged again, by the cycle again returns.
func (c *holdCycle) resolve() bool {
	if len(c.gone) == 0 {
		return false
	}
	jids := make([]string, 0, len(c.gone))
	for jid := range c.gone {
		jids = append(jids, jid)
	}
	out := make(map[string]JobStatus, len(jids))
	if err := lookupLog(c.ctx, c.sp, jids, out); err != nil {
		if c.err == nil {
			c.err = err
		}
		return false
	}
	for jid, s := range out {
		c.note(jid, s)
	}
	return true
}

// note records what a lookup found of dependency jid: an ended one's
// outcome in holds (it never changes); else its status this cycle, a
// missing one missing since now unless it already was, and one found in
// the spool (not gone, to be looked for in the log) missing no longer.
func (c *holdCycle) note(jid string, s JobStatus) {
	if s.Ended {
		c.h.ended[jid] = s.Outcome
		delete(c.h.missing, jid)
		delete(c.status, jid)
		return
	}
	c.status[jid] = s
	switch {
	case s.Missing:
		if _, ok := c.h.missing[jid]; !ok {
			c.h.missing[jid] = c.now
		}
	case !c.gone[jid]:
		delete(c.h.missing, jid)
	}
}

// again is a cycle of holds at the same time as c, to judge the jobs anew
// after c.resolve looked in the accounting log: the dependencies ended
// there are in holds, and c's lookups (those the log did not have among
// them, missing) are carried over, so that nothing is looked up again,
// neither in the log nor in the spool nor the claims.
func (c *holdCycle) again() *holdCycle {
	n := c.h.cycle(c.ctx, c.now, c.sp, c.active)
	n.err, n.status, n.claims = c.err, c.status, c.claims
	return n
}

// finish forgets, after a cycle, what it knew of the dependencies that no
// job judged in it named, so that holds is as large as the jobs that wait.
func (c *holdCycle) finish() {
	for jid := range c.h.ended {
		if !c.named[jid] {
			delete(c.h.ended, jid)
		}
	}
	for jid := range c.h.missing {
		if !c.named[jid] {
			delete(c.h.missing, jid)
		}
	}
}

// arrayActive counts the members of each array placed or running (in
// runnable/ and running/), for the arrays' limits: read through the cache
// the snapshot reads them through next.
func (d *Sched) arrayActive() map[string]int {
	n := map[string]int{}
	for _, st := range []spool.State{spool.Runnable, spool.Running} {
		names, err := d.sp.Names(st)
		if err != nil {
			d.log.Warn("cannot count the array members placed or running; taking none", "state", st, "err", err)
			continue
		}
		for _, name := range names {
			if j, err := d.cache.Read(st, name); err == nil && j.ArrayJob != "" {
				n[j.ArrayJob]++
			}
		}
	}
	return n
}
