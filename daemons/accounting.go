package daemons

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"msched/acct"
	"msched/notify"
	"msched/profiler"
	"msched/spool"
)

// swfHeader starts a new SWF file. Submit times are seconds since the Unix
// epoch (UnixStartTime 0), so they need no per-file offset and two logs of
// one spool line up; job numbers are the JIDs' numbers.
const swfHeader = `; Version: 2.2
; Computer: msched
; Installation: msched reaper accounting log
; UnixStartTime: 0
; TimeZoneString: UTC
; Note: submit times are seconds since 1970-01-01 00:00:00 UTC; job numbers are JID numbers;
; Note: user and executable numbers are assigned in order of first appearance in accounting.jsonl
`

// recordField bounds each string of a record that a user's file sets (the
// name, the executable, its category, the model's name, the reason, which
// may quote the file), so that a record stays far below acct.MaxRecordLine even when JSON
// escapes every byte (up to six times longer): a rejected submission's name
// is salvaged from up to a whole job file, and a command's word may be
// 128 KiB. A longer line would be skipped by every reader of the log.
const recordField = spool.MaxReason

// NewRecord is the accounting record of a job in finished/ or rejected/.
func NewRecord(j *spool.Job) acct.Record {
	r := acct.Record{JID: j.JID, Name: spool.Clip(j.Name, recordField), User: j.User, UID: j.UID, SubmittedAt: j.SubmittedAt,
		State: spool.Outcome(j.State()), Reason: spool.Clip(j.Reason, recordField), Cancelled: j.CancelRequested || j.Reason == "cancelled"}
	if len(j.Command) > 0 {
		r.Executable = spool.Clip(j.Command[0], recordField)
		r.Category = spool.Clip(profiler.Category(j.Command), recordField)
	}
	if j.Model != nil {
		r.Model = spool.Clip(j.Model.Name, recordField)
	}
	if j.Schedule != nil {
		r.Hosts = j.Schedule.Hosts
	}
	if p, ok := j.Predicted(); ok {
		r.PredictedSeconds = ptr(p.Seconds())
	}
	if run := j.Run; run != nil {
		r.StartedAt, r.EndedAt, r.ExitStatus, r.Signal, r.Attempts = run.StartedAt, run.EndedAt, run.ExitStatus, run.Signal, run.Attempts
		if a, ok := j.Actual(); ok {
			r.ActualSeconds = ptr(a.Seconds())
		}
		if !run.StartedAt.IsZero() && !j.SubmittedAt.IsZero() {
			r.WaitSeconds = ptr(run.StartedAt.Sub(j.SubmittedAt).Seconds())
		}
	}
	switch r.End() {
	case acct.EndCancelled:
		r.SWFStatus = acct.SWFCancelled
	case acct.EndCompleted:
		r.SWFStatus = acct.SWFCompleted
	default:
		r.SWFStatus = acct.SWFFailed
	}
	return r
}

func ptr[T any](v T) *T { return &v }

// accounting appends to the two logs. It remembers which JIDs each already
// holds, so that reaping a job again after a crash (between the append and
// the removal of the job file) adds nothing: never two records for a JID.
type accounting struct {
	swf, jsonl       *appendLog
	inSWF, inJSONL   map[string]bool
	users, exes      map[string]int // SWF numbers, from 1 in order of first appearance
	nextUser, nextEx int
	models           map[string]*notify.ModelAccuracy // per model: accuracy of its recorded jobs
}

// openAccounting opens (creating) both logs in dir, cuts a torn last line
// left by a crash in the middle of an append, and loads the JIDs recorded.
func openAccounting(dir string) (*accounting, error) {
	a := &accounting{inSWF: map[string]bool{}, inJSONL: map[string]bool{}, users: map[string]int{}, exes: map[string]int{},
		models: map[string]*notify.ModelAccuracy{}}
	var err error
	var data []byte
	if a.jsonl, data, err = openLog(filepath.Join(dir, acct.JSONL), ""); err != nil {
		return nil, err
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		r, ok := acct.ParseRecordLine(line)
		if !ok {
			continue
		}
		a.inJSONL[r.JID] = true
		a.number(r)
		a.observeModel(r)
	}
	if a.swf, data, err = openLog(filepath.Join(dir, acct.SWF), swfHeader); err != nil {
		a.jsonl.close()
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != swfFields || strings.HasPrefix(f[0], ";") {
			continue // a comment, or not a whole line (an older msched's torn append)
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil && n > 0 {
			a.inSWF[spool.FormatJID(n)] = true
		}
	}
	return a, nil
}

// swfFields is the number of fields of an SWF 2.2 line.
const swfFields = 18

// appendLog is an append-only log of whole lines. An append is whole or
// not there: a write that fails half-way (ENOSPC after some blocks, EIO)
// is cut back to the log's last whole length at once, and before the next
// append if that cut failed too, so that a failed append never leaves a
// torn line for the next one to be glued to. A crash between the write and
// the cut leaves a torn last line, which openLog cuts.
type appendLog struct {
	f      logFile
	size   int64  // of the whole lines: where the next append goes
	torn   bool   // bytes after size may be there (a failed append not yet cut)
	header []byte // written before the first append to an empty log
}

// logFile is what appendLog needs of its file; tests give it one that
// fails.
type logFile interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
}

// openLog opens an append-only log, returning its whole lines. A last line
// without its newline is a torn append: it is cut, and the record it was
// is written again by the next reap of that job. An empty log gets header
// with its first append (not at once: opening writes nothing, so that a
// reaper can start on a full disk).
func openLog(path, header string) (*appendLog, []byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, spool.FilePerm)
	if err != nil {
		return nil, nil, fmt.Errorf("daemons: accounting: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("daemons: accounting: %w", err)
	}
	l := &appendLog{f: f, size: int64(len(data)), header: []byte(header)}
	if whole := bytes.LastIndexByte(data, '\n') + 1; whole < len(data) {
		data = data[:whole]
		l.size, l.torn = int64(whole), true
	}
	if err := l.cut(); err != nil {
		f.Close()
		return nil, nil, err
	}
	return l, data, nil
}

// append writes b (whole lines) at the end of the log and fsyncs it. On
// error the log is as it was before (or is cut back to that before the
// next append).
func (l *appendLog) append(b []byte) error {
	if err := l.cut(); err != nil {
		return err
	}
	if l.size == 0 && len(l.header) > 0 {
		b = append(l.header[:len(l.header):len(l.header)], b...)
	}
	l.torn = true // until the write and the fsync have succeeded
	if _, err := l.f.Write(b); err != nil {
		return errors.Join(fmt.Errorf("daemons: accounting: %w", err), l.cut())
	}
	if err := l.f.Sync(); err != nil {
		// The data may or may not be on disk: cut it, and the caller
		// writes it again.
		return errors.Join(fmt.Errorf("daemons: accounting: %w", err), l.cut())
	}
	l.size += int64(len(b))
	l.torn = false
	return nil
}

// cut truncates a log with a failed append back to its whole lines.
func (l *appendLog) cut() error {
	if !l.torn {
		return nil
	}
	if err := l.f.Truncate(l.size); err != nil {
		return fmt.Errorf("daemons: accounting: cutting a failed append: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("daemons: accounting: cutting a failed append: %w", err)
	}
	l.torn = false
	return nil
}

func (l *appendLog) close() error { return l.f.Close() }

// number gives r's user and executable their SWF numbers.
func (a *accounting) number(r acct.Record) (user, exe int) {
	user, exe = -1, -1
	if r.User != "" {
		if a.users[r.User] == 0 {
			a.nextUser++
			a.users[r.User] = a.nextUser
		}
		user = a.users[r.User]
	}
	if r.Executable != "" {
		if a.exes[r.Executable] == 0 {
			a.nextEx++
			a.exes[r.Executable] = a.nextEx
		}
		exe = a.exes[r.Executable]
	}
	return user, exe
}

// record appends the records of jobs to whichever log does not hold them
// yet, in one write and one fsync per log, before any of the job files may
// be removed. A batch shares its fsyncs: the reaper reaps what one scan
// found together.
func (a *accounting) record(jobs ...*spool.Job) error {
	var swf, jsonl []byte
	var inSWF, inJSONL []string
	var added []acct.Record
	for _, j := range jobs {
		r := NewRecord(j)
		if !a.inSWF[r.JID] {
			swf = append(swf, swfLine(j, r, a)+"\n"...)
			inSWF = append(inSWF, r.JID)
		}
		if !a.inJSONL[r.JID] {
			b, err := json.Marshal(r)
			if err != nil {
				return fmt.Errorf("daemons: accounting: %w", err)
			}
			jsonl = append(append(jsonl, b...), '\n')
			inJSONL = append(inJSONL, r.JID)
			added = append(added, r)
		}
	}
	if len(swf) > 0 {
		if err := a.swf.append(swf); err != nil {
			return err
		}
		for _, jid := range inSWF {
			a.inSWF[jid] = true
		}
	}
	if len(jsonl) > 0 {
		if err := a.jsonl.append(jsonl); err != nil {
			return err
		}
		for _, jid := range inJSONL {
			a.inJSONL[jid] = true
		}
		for _, r := range added {
			a.observeModel(r)
		}
	}
	return nil
}

// observeModel adds a finished job's prediction error to its model's
// running accuracy, which the next report of that model shows.
func (a *accounting) observeModel(r acct.Record) {
	if r.Model == "" || r.PredictedSeconds == nil || r.ActualSeconds == nil || *r.ActualSeconds < 0 {
		return
	}
	m := a.models[r.Model]
	if m == nil {
		m = &notify.ModelAccuracy{}
		a.models[r.Model] = m
	}
	m.Observe(*r.PredictedSeconds, *r.ActualSeconds)
}

// accuracy is model's accuracy so far (nil: no job of it yet). The copy
// keeps concurrent report rendering off the running totals.
func (a *accounting) accuracy(model string) *notify.ModelAccuracy {
	m := a.models[model]
	if m == nil {
		return nil
	}
	c := *m
	return &c
}

// swfLine renders the 18 SWF 2.2 fields; -1 where msched does not know.
func swfLine(j *spool.Job, r acct.Record, a *accounting) string {
	secs := func(p *float64) int64 {
		if p == nil {
			return -1
		}
		return int64(math.Round(*p))
	}
	num, _ := strconv.ParseInt(strings.TrimPrefix(r.JID, "J"), 10, 64)
	submit := int64(-1)
	if !r.SubmittedAt.IsZero() {
		submit = r.SubmittedAt.Unix()
	}
	alloc := int64(-1)
	if len(r.Hosts) > 0 && r.StartedAt.Unix() > 0 {
		alloc = int64(len(r.Hosts))
	}
	lo, hi := j.HostRange()
	req := int64(hi)
	if hi == 0 {
		req = int64(lo)
	}
	if j.Original != "" {
		req = -1 // a rejected submission's request is unknown
	}
	reqTime := int64(-1)
	if j.Walltime > 0 {
		reqTime = int64(math.Ceil(time.Duration(j.Walltime).Seconds()))
	}
	user, exe := a.number(r)
	f := []int64{
		num, submit, secs(r.WaitSeconds), secs(r.ActualSeconds), alloc,
		-1, -1, // average CPU time, used memory
		req, reqTime, -1, // requested procs, time, memory
		int64(r.SWFStatus), int64(user), -1, int64(exe), // status, user, group, executable
		-1, -1, -1, -1, // queue, partition, preceding job, think time
	}
	s := make([]string, len(f))
	for i, v := range f {
		s[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(s, " ")
}

func (a *accounting) close() {
	a.swf.close()
	a.jsonl.close()
}
