package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"sync"

	gomail "github.com/wneessen/go-mail"
)

// HeaderJID names the job a report mail is about, for filters and for
// finding the report file (reports/<JID>.txt).
const HeaderJID = "X-Msched-JID"

// message builds the mail for e: From, To, Subject (RFC 2047-encoded when
// not ASCII), Date and Message-ID as queued, X-Msched-JID, and the report
// as text/plain; charset=utf-8 in quoted-printable, which survives servers
// without 8BITMIME.
func (m *Mailer) message(e *queued) (*gomail.Msg, error) {
	msg := gomail.NewMsg(gomail.WithCharset(gomail.CharsetUTF8), gomail.WithEncoding(gomail.EncodingQP),
		gomail.WithNoDefaultUserAgent())
	if err := msg.From(m.cfg.From); err != nil {
		return nil, fmt.Errorf("notify: mail: from %q: %w", m.cfg.From, err)
	}
	if err := msg.To(e.Report.To); err != nil {
		return nil, fmt.Errorf("notify: mail: job %s: notify address %q: %w", e.Report.JID, e.Report.To, err)
	}
	msg.Subject(OneLine(e.Report.Subject))
	msg.SetDateWithValue(e.Date)
	msg.SetMessageIDWithValue(e.MessageID)
	msg.SetGenHeader(gomail.Header(HeaderJID), OneLine(e.Report.JID))
	msg.SetUserAgent("msched")
	// Captured job output may be any bytes; the part says UTF-8.
	msg.SetBodyString(gomail.TypeTextPlain, strings.ToValidUTF8(e.Report.Body, "\uFFFD"))
	return msg, nil
}

// OneLine turns control characters (a job name with a newline) into
// spaces: a header value is one line.
func OneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// send makes one delivery attempt of e, bounded by the configured timeout.
//
// The connection is dialled here rather than by go-mail, for two reasons:
// go-mail leaves the connection open when the greeting, STARTTLS or AUTH
// fails, and it watches ctx only while dialling. Here the connection is
// closed when the attempt ends, however it ends, and at once when ctx is
// done (Close), so a server that stops answering holds nothing.
func (m *Mailer) send(ctx context.Context, e *queued) error {
	msg, err := m.message(e)
	if err != nil {
		return err
	}
	c := m.cfg
	tcfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLSConfig != nil {
		tcfg = c.TLSConfig.Clone()
	}
	if tcfg.ServerName == "" {
		tcfg.ServerName = c.Host
	}

	var mu sync.Mutex
	var conns []net.Conn
	closeAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, cn := range conns {
			_ = cn.Close()
		}
		conns = nil
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		cn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		conns = append(conns, cn)
		mu.Unlock()
		if c.TLS {
			tc := tls.Client(cn, tcfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				return nil, err
			}
			cn = tc
		}
		return cn, nil
	}
	opts := []gomail.Option{gomail.WithPort(c.Port), gomail.WithTimeout(c.Timeout), gomail.WithHELO(c.Hostname),
		gomail.WithTLSConfig(tcfg), gomail.WithDialContextFunc(dial)}
	switch {
	case c.TLS:
		// TLS is done by dial; go-mail must not try STARTTLS on top.
		opts = append(opts, gomail.WithSSL(), gomail.WithTLSPolicy(gomail.NoTLS))
	case c.StartTLS == StartTLSAlways:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case c.StartTLS == StartTLSNever:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if c.Username != "" {
		// The strongest mechanism the server offers. PLAIN and LOGIN are
		// refused by go-mail on a connection without TLS (but to
		// localhost), so a password never crosses the network in the clear.
		opts = append(opts, gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthSCRAMSHA256, gomail.SMTPAuthSCRAMSHA1,
			gomail.SMTPAuthCramMD5, gomail.SMTPAuthPlain, gomail.SMTPAuthLogin),
			gomail.WithUsername(c.Username), gomail.WithPassword(c.Password))
	}
	client, err := gomail.NewClient(c.Host, opts...)
	if err != nil {
		return fmt.Errorf("notify: mail: %w", err)
	}

	actx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	stop := context.AfterFunc(actx, closeAll)
	defer stop()
	defer closeAll()
	if err := client.DialAndSendWithContext(actx, msg); err != nil {
		if actx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %v: %w", c.Timeout, err)
		}
		return fmt.Errorf("notify: mail: %s:%d: %w", c.Host, c.Port, err)
	}
	return nil
}

// permanent tells whether a failed attempt should not be repeated: the
// server answered 5xx (RFC 5321 §4.2.1: "the SMTP client SHOULD NOT repeat
// the exact request"). An AUTH rejection is the exception: the message is
// fine and the fix (the password) is on our side; like Postfix's
// smtp_sasl_auth_soft_bounce, such failures are retried.
func permanent(err error) bool {
	code := replyCode(err)
	return code >= 500 && code < 600 && !authRejected(code)
}

// authRejected: 530 authentication required, 534 mechanism too weak, 535
// credentials invalid, 538 encryption required (RFC 4954 §6).
func authRejected(code int) bool {
	return code == 530 || code == 534 || code == 535 || code == 538
}

// replyCode is the SMTP reply code in err, 0 when the server gave none
// (a network error, a TLS failure, a timeout).
func replyCode(err error) int {
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code
	}
	var se *gomail.SendError // does not unwrap to its server reply
	if errors.As(err, &se) {
		return se.ErrorCode()
	}
	return 0
}
