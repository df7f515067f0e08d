package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"msched/acct"
	"msched/spool"
)

// A session is a cookie and a file. The cookie carries its issue time and
// a random id, signed with a key derived from the access token (changing
// the token logs everyone out); the file, db/web/sessions/… (state.go),
// says the session is live, and logout removes it, so a copy of the cookie
// is worth nothing afterwards. Both work when every request is a new CGI
// process. The CSRF token of a session is a second MAC of the same
// payload, put in a hidden field of every form and compared in constant
// time; SameSite=Strict keeps the cookie off cross-site requests as a
// second line.

const (
	sessionCookie = "msched_session"
	// sessionTTL bounds how long a stolen cookie is worth anything; a
	// working day is long enough not to annoy an operator.
	sessionTTL = 12 * time.Hour
)

func sessionKey(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("msched web session key v1"))
	return m.Sum(nil)
}

func (h *handler) mac(purpose string, payload []byte) []byte {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)
}

var b64 = base64.RawURLEncoding

// newSession returns a new session's payload and its cookie value:
// payload "." MAC.
func (h *handler) newSession() (payload []byte, cookie string) {
	p := make([]byte, 8+16)
	binary.BigEndian.PutUint64(p, uint64(h.cfg.Now().Unix()))
	_, _ = rand.Read(p[8:])
	return p, b64.EncodeToString(p) + "." + b64.EncodeToString(h.mac("session", p))
}

// session returns the request's valid, unexpired, not revoked session
// payload.
func (h *handler) session(r *http.Request) ([]byte, bool) {
	if h.key == nil {
		return nil, false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, false
	}
	ps, ms, ok := strings.Cut(c.Value, ".")
	if !ok {
		return nil, false
	}
	p, err1 := b64.DecodeString(ps)
	m, err2 := b64.DecodeString(ms)
	if err1 != nil || err2 != nil || len(p) != 24 || !hmac.Equal(m, h.mac("session", p)) {
		return nil, false
	}
	issued := time.Unix(int64(binary.BigEndian.Uint64(p)), 0)
	if age := h.cfg.Now().Sub(issued); age < -time.Minute || age > sessionTTL {
		return nil, false
	}
	return p, h.sessionLive(p)
}

func (h *handler) csrfToken(sess []byte) string { return b64.EncodeToString(h.mac("csrf", sess)) }

// postAllowed checks what every POST needs, login included: actions
// configured and no cross-site origin. It answers the refusal itself.
func (h *handler) postAllowed(w http.ResponseWriter, r *http.Request) bool {
	if h.key == nil {
		http.Error(w, "read-only: no access token is configured (web.token)", http.StatusForbidden)
		return false
	}
	if !sameOrigin(r) {
		http.Error(w, "refused: cross-site request", http.StatusForbidden)
		return false
	}
	return true
}

// authorise checks a POST that changes something: postAllowed, a valid
// session and the session's CSRF token in the form (constant-time
// compare). It answers the refusal itself.
func (h *handler) authorise(w http.ResponseWriter, r *http.Request) bool {
	if !h.postAllowed(w, r) {
		return false
	}
	sess, ok := h.session(r)
	if !ok {
		http.Error(w, "refused: not logged in (or the session expired)", http.StatusForbidden)
		return false
	}
	got, err := b64.DecodeString(r.PostFormValue("csrf"))
	if err != nil || !hmac.Equal(got, h.mac("csrf", sess)) {
		http.Error(w, "refused: missing or wrong CSRF token; reload the page", http.StatusForbidden)
		return false
	}
	return true
}

// sameOrigin refuses requests a browser marks as cross-site, and those
// whose Origin names another host. Requests without either header (curl,
// old browsers) pass to the token checks.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	}
	return true
}

func (h *handler) cookiePath() string {
	if h.cfg.Base == "" {
		return "/"
	}
	return h.cfg.Base + "/"
}

func (h *handler) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: value, Path: h.cookiePath(), MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// LoginPage is the data of the login page.
type LoginPage struct {
	Enabled bool
	Next    string
	Error   string
}

func (h *handler) loginPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, "login", "Log in", LoginPage{Enabled: h.key != nil, Next: nextJID(r.URL.Query().Get("next"))})
}

func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	next := nextJID(r.PostFormValue("next"))
	if !h.postAllowed(w, r) {
		return
	}
	wait, err := h.beginLogin(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if wait > 0 {
		secs := int64((wait + time.Second - 1) / time.Second)
		h.log.Warn("web: login refused: too many failures", "remote", r.RemoteAddr, "retry_after_s", secs)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		h.renderCode(w, r, http.StatusTooManyRequests, "login", "Log in", LoginPage{Enabled: true, Next: next,
			Error: fmt.Sprintf("Too many failed logins; try again in %s.", dur(float64(secs)))})
		return
	}
	// Compare digests, so neither the time nor an early exit tells the
	// token's length.
	a, b := sha256.Sum256([]byte(r.PostFormValue("token"))), sha256.Sum256([]byte(h.cfg.Token))
	if !hmac.Equal(a[:], b[:]) {
		h.log.Warn("web: failed login", "remote", r.RemoteAddr)
		h.renderCode(w, r, http.StatusForbidden, "login", "Log in", LoginPage{Enabled: true, Next: next, Error: "Wrong token."})
		return
	}
	if err := h.loginSucceeded(r); err != nil {
		// The attempt stays counted as a failure; the login goes on.
		h.log.Warn("web: login not forgiven", "remote", r.RemoteAddr, "err", err)
	}
	p, cookie := h.newSession()
	if err := h.recordSession(p); err != nil {
		h.fail(w, r, err)
		return
	}
	h.setCookie(w, r, cookie, int(sessionTTL.Seconds()))
	to := h.cfg.Base + "/"
	if next != "" {
		to = h.cfg.Base + "/jobs/" + next
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// nextJID accepts only a JID as the page to return to after login, so the
// redirect can never leave the site.
func nextJID(s string) string {
	if spool.ValidJID(s) {
		return s
	}
	return ""
}

func (h *handler) logout(w http.ResponseWriter, r *http.Request) {
	if !h.authorise(w, r) {
		return
	}
	if sess, ok := h.session(r); ok {
		if err := h.revokeSession(sess); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	h.setCookie(w, r, "", -1)
	http.Redirect(w, r, h.cfg.Base+"/", http.StatusSeeOther)
}

// cancel asks the daemons to cancel a job (a request in control/,
// spool.RequestCancel).
func (h *handler) cancel(w http.ResponseWriter, r *http.Request) {
	if !h.authorise(w, r) {
		return
	}
	jid := r.PathValue("jid")
	st, j, err := h.cfg.Spool.Find(jid)
	if errors.Is(err, spool.ErrNotFound) || (err == nil && st == spool.Submitted) {
		http.Error(w, fmt.Sprintf("%s is not in a state that can be cancelled", jid), http.StatusConflict)
		return
	}
	var pe *spool.ParseError
	if err != nil && !errors.As(err, &pe) {
		h.refuse(w, r, http.StatusBadRequest, err)
		return
	}
	switch st {
	case spool.Queued, spool.Scheduling, spool.Runnable, spool.Running:
	default:
		http.Error(w, fmt.Sprintf("%s is %s: nothing to cancel", jid, st), http.StatusConflict)
		return
	}
	// The request is the page's own user's; the daemons honour it only from
	// the job's owner or root. Say so here rather than write one they drop.
	if err := (spool.Control{Kind: spool.Cancel, JID: jid, UID: os.Geteuid()}).Allowed(j); err != nil {
		http.Error(w, fmt.Sprintf("this page runs as %s: %s", spool.UserName(os.Geteuid()), h.public(err)), http.StatusForbidden)
		return
	}
	if err := h.cfg.Spool.RequestCancel(jid); err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.Info("web: cancel requested", "jid", jid, "remote", r.RemoteAddr)
	http.Redirect(w, r, h.cfg.Base+"/jobs/"+jid+"?msg=cancel", http.StatusSeeOther)
}

// resubmit submits the job's request again: the user's fields only (name,
// command, workdir, notify, mail, hosts, components, request, model,
// walltime, stdout, stderr, env, submit_dir, launch, ranks_per_host), never
// the daemons' sections, as a new file in submitted/. A job that has left
// the spool is resubmitted from its accounting record and its report
// (reapedRequest), which keep less. Init runs a job as its file's owner,
// so the file is the original job's owner's (spool.SubmitAs; the page runs
// as root to give it away), never the page's own user's: as root that
// would run a user's job as root. A page that can do neither refuses.
func (h *handler) resubmit(w http.ResponseWriter, r *http.Request) {
	if !h.authorise(w, r) {
		return
	}
	jid := r.PathValue("jid")
	var req spool.Job
	var owner int
	var known bool
	var user string
	msg := "resubmit"
	_, j, err := h.cfg.Spool.Find(jid)
	switch {
	case errors.Is(err, spool.ErrNotFound):
		rec, err := findRecord(h.cfg.Spool, jid)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if rec == nil {
			http.Error(w, fmt.Sprintf("%s is neither in the spool nor in the accounting log", jid), http.StatusNotFound)
			return
		}
		head, err := readReportHead(h.cfg.Spool, jid)
		if err != nil && !errors.Is(err, errNoReport) {
			h.fail(w, r, err)
			return
		}
		if req, err = reapedRequest(rec, head, err == nil); err != nil {
			http.Error(w, fmt.Sprintf("%s cannot be resubmitted from the page: %v", jid, err), http.StatusConflict)
			return
		}
		user = rec.User
		if rec.UID != nil {
			// The uid the job ran as: a name may have been reused since.
			owner, known = *rec.UID, true
		} else {
			owner, known = spool.UserID(rec.User)
		}
		msg = "resubmit-reaped"
	case err != nil:
		h.refuse(w, r, http.StatusBadRequest, err)
		return
	case len(j.Command) == 0:
		http.Error(w, fmt.Sprintf("%s has no request to resubmit (a rejected submission)", jid), http.StatusConflict)
		return
	default:
		req = spool.Job{Name: j.Name, Command: j.Command, Workdir: j.Workdir, Notify: j.Notify, Mail: j.Mail, Hosts: j.Hosts,
			Components: j.Components, Request: j.Request, Model: j.Model, Walltime: j.Walltime, Stdout: j.Stdout, Stderr: j.Stderr,
			Env: j.Env, SubmitDir: j.SubmitDir, Launch: j.Launch, RanksPerHost: j.RanksPerHost}
		user = j.User
		owner, known = jobOwner(j)
	}
	switch euid := os.Geteuid(); {
	case !known:
		http.Error(w, fmt.Sprintf("%s's owner (%q) is not a user of this system; it cannot be resubmitted as them", jid, user), http.StatusConflict)
		return
	case euid != 0 && euid != owner:
		http.Error(w, fmt.Sprintf("%s belongs to %s; this page runs as %s and can submit only its own jobs (as root it resubmits as the job's owner)",
			jid, spool.UserName(owner), spool.UserName(euid)), http.StatusForbidden)
		return
	}
	data, err := req.Marshal()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	name, err := h.cfg.Spool.SubmitAs("resubmit-"+jid+".yaml", data, owner)
	if name != "" {
		// In submitted/, even if a step after the rename failed.
		h.log.Info("web: resubmitted", "jid", jid, "file", name, "owner", spool.UserName(owner), "remote", r.RemoteAddr)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	http.Redirect(w, r, h.cfg.Base+"/jobs/"+jid+"?msg="+msg, http.StatusSeeOther)
}

// reapedRequest is the request of a job that has left the spool, as far as
// its accounting record (name, user, host count) and its report's header
// (command, workdir, stdout) keep it. Walltime, model and its parameters,
// environment, notify and mail settings, stderr, launch and submit_dir are
// not kept: the new job goes without them (the profiler estimates it), and
// the page says so beside the button. It refuses what it cannot rebuild:
// no report, a field the report clipped, a co-allocated request, and
// relative paths, which resolved against the directory the job was
// submitted from (submit_dir), which neither keeps.
func reapedRequest(rec *acct.Record, head reportHead, haveReport bool) (spool.Job, error) {
	switch {
	case !haveReport:
		return spool.Job{}, errors.New("its report, which keeps its command line, is gone (retention.reports_age)")
	case len(head.Command) == 0:
		return spool.Job{}, errors.New("its report shows no command (a rejected submission)")
	case head.Clipped:
		return spool.Job{}, errors.New("its report shows its command line or workdir cut short")
	case head.Coallocated:
		return spool.Job{}, errors.New("its co-allocated request (components) is not kept")
	}
	relative := func(p string) bool { return p != "" && !filepath.IsAbs(p) }
	if relative(head.Workdir) || relative(head.Stdout) || (strings.Contains(head.Command[0], "/") && relative(head.Command[0])) {
		return spool.Job{}, errors.New("its paths are relative to the directory it was submitted from, which is not kept; submit its job file again with msched submit")
	}
	req := spool.Job{Name: rec.Name, Command: head.Command, Workdir: head.Workdir, Stdout: head.Stdout}
	if n := len(rec.Hosts); n > 1 {
		req.Hosts = &spool.Hosts{Count: n}
	}
	return req, nil
}

// jobOwner is the uid a job runs as: its recorded uid, or, in a job file
// written before msched recorded it, its user's by name.
func jobOwner(j *spool.Job) (uid int, ok bool) {
	if j.UID != nil {
		return *j.UID, true
	}
	return spool.UserID(j.User)
}
