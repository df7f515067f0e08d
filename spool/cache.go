package spool

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
)

// Names returns the names of the job files in a state, oldest first: by JID
// number, then (submitted/ only) other names in byte order. Unlike List it
// reads the directory and nothing else (no stat of each file), so a daemon
// can afford it on every wake-up of a directory that holds thousands of
// waiting jobs.
func (s *Spool) Names(st State) ([]string, error) {
	if !st.Valid() {
		return nil, fmt.Errorf("spool: names: unknown state %q", st)
	}
	des, err := os.ReadDir(s.Dir(st))
	if err != nil {
		return nil, fmt.Errorf("spool: names %s: %w", st, err)
	}
	type named struct {
		n    int64
		ok   bool
		name string
	}
	ns := make([]named, 0, len(des))
	for _, d := range des {
		if d.Name()[0] == '.' || !d.Type().IsRegular() {
			continue
		}
		n, ok := jidNumber(d.Name())
		ns = append(ns, named{n, ok, d.Name()})
	}
	slices.SortFunc(ns, func(a, b named) int {
		if a.ok != b.ok {
			if a.ok {
				return -1 // JIDs first
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.n, b.n), strings.Compare(a.name, b.name))
	})
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.name
	}
	return out, nil
}

// Cache keeps the parsed job files a daemon has read, so that a daemon that
// looks at the same files on every cycle (sched: its window and the running
// jobs) parses each version of a file once. Read still reads the file, a
// few microseconds, and parses it only if its bytes differ from the cached
// version's: a file's identity (inode, size, time) is not enough, since
// inodes are reused and file times are coarse. ReadOwned does not read a
// cached file again, for a state whose files change only through the
// caller. Reads return a copy, which the caller may change and Move. A
// Cache is safe for concurrent use.
type Cache struct {
	s  *Spool
	mu sync.Mutex
	m  map[cacheKey]cached
}

type cacheKey struct {
	st   State
	name string
}

type cached struct {
	data []byte
	j    *Job
}

// NewCache returns an empty cache of s's job files.
func (s *Spool) NewCache() *Cache { return &Cache{s: s, m: map[cacheKey]cached{}} }

// Read is Spool.Read through the cache.
func (c *Cache) Read(st State, name string) (*Job, error) {
	key := cacheKey{st, name}
	data, err := c.s.readFile(st, name)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			c.forget(key)
		}
		return nil, err
	}
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && bytes.Equal(e.data, data) {
		return e.j.Clone(), nil
	}
	j, err := Parse(name, data)
	if err != nil {
		c.forget(key)
		return nil, err
	}
	j.state, j.file = st, name
	c.mu.Lock()
	c.m[key] = cached{data, j}
	c.mu.Unlock()
	return j.Clone(), nil
}

// ReadOwned is Read for a state whose files change only through the
// caller: no other daemon removes or rewrites them there (others may only
// add new names, as init and run add to sched's queued/). A file cached
// there is then returned without reading it again. The caller must Forget
// every file of st it moves or rewrites, so that a file that leaves and
// comes back under the same name (sched places a job, run re-queues it) is
// read again; and Keep with each listing.
func (c *Cache) ReadOwned(st State, name string) (*Job, error) {
	c.mu.Lock()
	e, ok := c.m[cacheKey{st, name}]
	c.mu.Unlock()
	if ok {
		return e.j.Clone(), nil
	}
	return c.Read(st, name)
}

// Forget drops the cached file name of state st.
func (c *Cache) Forget(st State, name string) { c.forget(cacheKey{st, name}) }

// Keep forgets the cached files of state st that are not among names (the
// state's current listing), so the cache holds no more than the directories.
func (c *Cache) Keep(st State, names []string) {
	in := make(map[string]bool, len(names))
	for _, n := range names {
		in[n] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k.st == st && !in[k.name] {
			delete(c.m, k)
		}
	}
}

func (c *Cache) forget(k cacheKey) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}

// Clone returns a deep copy of j: changing one (fields, slices, maps,
// sections) leaves the other as it was.
func (j *Job) Clone() *Job {
	c := *j
	c.Command = slices.Clone(j.Command)
	if j.Hosts != nil {
		h := *j.Hosts
		c.Hosts = &h
	}
	if j.Model != nil {
		m := *j.Model
		if j.Model.Params != nil {
			m.Params = make(map[string]float64, len(j.Model.Params))
			for k, v := range j.Model.Params {
				m.Params[k] = v
			}
		}
		c.Model = &m
	}
	c.Env = maps.Clone(j.Env)
	if j.UID != nil {
		uid := *j.UID
		c.UID = &uid
	}
	c.History = slices.Clone(j.History)
	c.Mail, c.Components = slices.Clone(j.Mail), slices.Clone(j.Components)
	c.After, c.AfterOK = slices.Clone(j.After), slices.Clone(j.AfterOK)
	if j.ArrayIndex != nil {
		i := *j.ArrayIndex
		c.ArrayIndex = &i
	}
	if j.Schedule != nil {
		s := *j.Schedule
		s.Hosts = slices.Clone(j.Schedule.Hosts)
		c.Schedule = &s
	}
	if j.Run != nil {
		r := *j.Run
		if j.Run.ExitStatus != nil {
			es := *j.Run.ExitStatus
			r.ExitStatus = &es
		}
		c.Run = &r
	}
	return &c
}
