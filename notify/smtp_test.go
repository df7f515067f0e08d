package notify_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// smtpServer is a real SMTP server (emersion/go-smtp) on 127.0.0.1 whose
// backend keeps what it receives and fails on request.
type smtpServer struct {
	Host string
	Port int
	CA   *x509.CertPool // the self-signed certificate, when TLS is on

	// set before the first connection
	user, pass string // non-empty: AUTH PLAIN (after TLS) required before MAIL
	tempFails  int    // the first tempFails messages are answered 451 after DATA
	rcptCode   int    // non-zero: every RCPT TO is answered with this code
	// holdAfter > 0: every delivery attempt after the first holdAfter waits
	// at MAIL FROM (after it is counted in mails) until release is called
	// or the test ends: a retry that must not complete before the test says.
	holdAfter int

	released    chan struct{}
	releaseOnce sync.Once

	mu       sync.Mutex
	mails    []time.Time // when each MAIL FROM arrived: one per delivery attempt
	authFail int
	rejected [][]byte // data answered 451
	received []received
}

type received struct {
	From string
	To   []string
	Data []byte
	TLS  bool
	User string
}

type serverMode int

const (
	plainServer    serverMode = iota
	startTLSServer            // STARTTLS offered
	implicitTLS               // TLS from the first byte
)

// startSMTP starts a server; configure sets the behaviour fields before it
// accepts connections. It is closed when the test ends.
func startSMTP(t *testing.T, mode serverMode, configure func(*smtpServer)) *smtpServer {
	t.Helper()
	s := &smtpServer{released: make(chan struct{})}
	if configure != nil {
		configure(s)
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{s: s, conn: c}, nil
	}))
	srv.Domain = "localhost"
	srv.ErrorLog = testLogger{t}
	// Bounds on a client's next command, which comes in milliseconds: an
	// idle timeout would fail an attempt the test counts.
	srv.ReadTimeout, srv.WriteTimeout = waitBound, waitBound
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if mode != plainServer {
		cert, pool := selfSigned(t)
		s.CA = pool
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
		if mode == implicitTLS {
			l = tls.NewListener(l, cfg)
		} else {
			srv.TLSConfig = cfg
		}
	}
	host, port, _ := net.SplitHostPort(l.Addr().String())
	s.Host = host
	s.Port, _ = strconv.Atoi(port)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	t.Cleanup(s.release) // first: a held session ends too
	return s
}

// release lets the attempts held by holdAfter go on, and the later ones.
func (s *smtpServer) release() { s.releaseOnce.Do(func() { close(s.released) }) }

func (s *smtpServer) attempts() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.mails...)
}

func (s *smtpServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.received...)
}

type session struct {
	s    *smtpServer
	conn *smtp.Conn
	user string
	from string
	to   []string
}

func (se *session) AuthMechanisms() []string {
	if se.s.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (se *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != se.s.user || pass != se.s.pass {
			se.s.mu.Lock()
			se.s.authFail++
			se.s.mu.Unlock()
			return smtp.ErrAuthFailed
		}
		se.user = user
		return nil
	}), nil
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	s := se.s
	s.mu.Lock()
	s.mails = append(s.mails, time.Now())
	held := s.holdAfter > 0 && len(s.mails) > s.holdAfter
	s.mu.Unlock()
	if held {
		<-s.released
	}
	if s.user != "" && se.user == "" {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	}
	se.from = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if se.s.rcptCode != 0 {
		return &smtp.SMTPError{Code: se.s.rcptCode, EnhancedCode: smtp.EnhancedCode{se.s.rcptCode / 100, 1, 1}, Message: "No such user"}
	}
	se.to = append(se.to, to)
	return nil
}

func (se *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s := se.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tempFails > 0 {
		s.tempFails--
		s.rejected = append(s.rejected, data)
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Try again later"}
	}
	_, isTLS := se.conn.TLSConnectionState()
	s.received = append(s.received, received{From: se.from, To: se.to, Data: data, TLS: isTLS, User: se.user})
	return nil
}

func (se *session) Reset()        { se.from, se.to = "", nil }
func (se *session) Logout() error { return nil }

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "msched test SMTP"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// hangingServer accepts connections and never says a word.
type hangingServer struct {
	Addr string
	mu   sync.Mutex
	cons []net.Conn
}

func startHanging(t *testing.T) *hangingServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingServer{Addr: l.Addr().String()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.cons = append(h.cons, c)
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.cons {
			_ = c.Close()
		}
	})
	return h
}

func (h *hangingServer) accepted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.cons)
}

// testLogger sends the server's error log to the test's.
type testLogger struct{ t *testing.T }

func (l testLogger) Printf(format string, v ...any) { l.t.Logf("smtp server: "+format, v...) }
func (l testLogger) Println(v ...any)               { l.t.Log(append([]any{"smtp server:"}, v...)...) }
