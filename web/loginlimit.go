package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"time"

	"msched/atomicfile"
)

// Login rate limits. Each login attempt counts as a failure before the
// token is checked (and is forgiven if the token was right), so a burst of
// attempts sent at once is counted as it arrives, not after it was
// checked. Failures are counted per client address and for the account
// (there is one: the token), in db/web/logins.json under an flock of
// db/web/logins.lock, so that CGI processes share the counts. A key with
// free failures is locked for first, then twice as long after each further
// failure, up to max; a locked login is answered 429 with Retry-After and
// its token is not checked. A successful login clears its address's
// failures, takes back its own from the account's and lifts the account's
// lock.
//
// The account limit stops a guesser who changes address; its price is that
// such a guesser can keep the operator out, so its lock is shorter (the
// command line, `msched cancel`, still works then). golang.org/x/time/rate
// does not fit: its buckets live in one process's memory, and what is
// limited is failures, with a lock that grows, not a steady rate.

type loginLimit struct {
	free       int           // failures before the first lock
	first, max time.Duration // the first lock; the longest
}

var (
	// A person mistyping does it a few times; a guesser, thousands.
	loginPerClient = loginLimit{free: 5, first: time.Minute, max: time.Hour}
	// Several people behind one proxy address, each mistyping a few times,
	// stay under it; the lock is short because anybody can cause it.
	loginPerAccount = loginLimit{free: 20, first: time.Minute, max: 15 * time.Minute}
)

const (
	// forgetFailures: failures are forgotten this long after the last
	// one, once no lock holds.
	forgetFailures = time.Hour
	// maxLoginClients bounds logins.json: beyond it the addresses whose
	// last failure is oldest are dropped (an attacker with many addresses
	// still meets the account limit).
	maxLoginClients = 10000
	// loginLockWait bounds the wait for another process's hold of the
	// failure counts, which lasts one read and one write.
	loginLockWait = 5 * time.Second
	accountKey    = "account"
)

type failures struct {
	Count int       `json:"count"`
	Last  time.Time `json:"last"`
	Until time.Time `json:"until,omitzero"` // locked before this
}

func (l loginLimit) fail(f failures, now time.Time) failures {
	if now.Sub(f.Last) > forgetFailures && !now.Before(f.Until) {
		f = failures{}
	}
	f.Count++
	f.Last = now
	if over := f.Count - l.free; over >= 0 {
		d := l.max
		if over < 30 && l.first<<over < l.max {
			d = l.first << over
		}
		f.Until = now.Add(d)
	}
	return f
}

// clientKey is the address a request comes from: the IP, and for IPv6 its
// /64, which one host or one customer usually has whole.
func clientKey(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return "client " + r.RemoteAddr
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return "client " + p.String()
	}
	return "client " + a.String()
}

// withLogins runs f on the failure counts, under the lock, and writes them
// back.
func (h *handler) withLogins(f func(m map[string]failures)) error {
	dir := h.statePath()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("web: logins: %w", err)
	}
	lk, err := os.OpenFile(h.statePath("logins.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("web: logins: %w", err)
	}
	defer lk.Close() // releases the lock
	if err := atomicfile.TryLock(lk, loginLockWait); err != nil {
		return fmt.Errorf("web: logins: lock: %w", err)
	}
	path := h.statePath("logins.json")
	m := map[string]failures{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &m); err != nil {
			// Written by rename, so only tampering gets here; start afresh.
			h.log.Warn("web: logins.json unreadable; failure counts reset", "err", err)
			m = map[string]failures{}
		}
	} else if !os.IsNotExist(err) {
		return fmt.Errorf("web: logins: %w", err)
	}
	f(m)
	now := h.cfg.Now()
	for k, v := range m {
		if now.Sub(v.Last) > forgetFailures && !now.Before(v.Until) {
			delete(m, k)
		}
	}
	if len(m) > maxLoginClients+1 {
		keys := make([]string, 0, len(m))
		for k := range m {
			if k != accountKey {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(a, b string) int { return m[a].Last.Compare(m[b].Last) })
		for _, k := range keys[:len(m)-maxLoginClients-1] {
			delete(m, k)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("web: logins: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".logins-*")
	if err != nil {
		return fmt.Errorf("web: logins: %w", err)
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("web: logins: %w", werr)
	}
	return nil
}

// beginLogin counts an attempt from the request's client as a failure,
// unless the client or the account is locked: then it returns how long
// until the lock ends, and counts nothing.
func (h *handler) beginLogin(r *http.Request) (wait time.Duration, err error) {
	client, now := clientKey(r), h.cfg.Now()
	err = h.withLogins(func(m map[string]failures) {
		for _, k := range []string{client, accountKey} {
			wait = max(wait, m[k].Until.Sub(now))
		}
		if wait > 0 {
			return
		}
		m[client] = loginPerClient.fail(m[client], now)
		m[accountKey] = loginPerAccount.fail(m[accountKey], now)
	})
	return wait, err
}

// loginSucceeded forgives the attempt beginLogin counted: the client's
// failures go, and the account's count loses this one and its lock.
func (h *handler) loginSucceeded(r *http.Request) error {
	client := clientKey(r)
	return h.withLogins(func(m map[string]failures) {
		delete(m, client)
		// The account was not locked when this attempt began; a lock now
		// is this attempt's own doing, or a concurrent one's that a right
		// token outweighs.
		a := m[accountKey]
		a.Count--
		a.Until = time.Time{}
		if a.Count > 0 {
			m[accountKey] = a
		} else {
			delete(m, accountKey)
		}
	})
}
