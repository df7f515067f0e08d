package main

import (
	"fmt"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/viper"

	"msched/notify"
	"msched/spool"
)

// readMail reads the smtp.* and mail.* keys and web.url. Without smtp.host
// mail is off and the smtp.* keys are not checked; mail.* and web.url are
// checked all the same, so that a mistake shows before mail is turned on.
func readMail(v *viper.Viper) (notify.MailConfig, error) {
	c := notify.MailConfig{
		When:         v.GetStringSlice("mail.when"),
		Domain:       strings.TrimSpace(v.GetString("mail.domain")),
		WebURL:       strings.TrimRight(strings.TrimSpace(v.GetString("web.url")), "/"),
		Host:         v.GetString("smtp.host"),
		Port:         v.GetInt("smtp.port"),
		From:         v.GetString("smtp.from"),
		Username:     v.GetString("smtp.username"),
		Password:     v.GetString("smtp.password"),
		PasswordFile: v.GetString("smtp.password_file"),
		StartTLS:     notify.StartTLS(v.GetString("smtp.starttls")),
		TLS:          v.GetBool("smtp.tls"),
		Retry:        notify.Retry{Attempts: v.GetInt("smtp.max_attempts")},
	}
	if c.When == nil {
		c.When = []string{} // set to nothing ("[]"): never
	}
	for _, w := range c.When {
		switch w {
		case spool.MailBegin, spool.MailEnd, spool.MailFail:
		default:
			return c, fmt.Errorf("config: mail.when: %q: want a list of begin, end and fail, such as [end] or [begin, fail]", w)
		}
	}
	if c.Domain != "" {
		if _, err := mail.ParseAddress("user@" + c.Domain); err != nil || strings.ContainsAny(c.Domain, "@ ") {
			return c, fmt.Errorf("config: mail.domain: %q is not a mail domain like example.org", c.Domain)
		}
	}
	if c.WebURL != "" {
		u, err := url.Parse(c.WebURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return c, fmt.Errorf("config: web.url: %q is not an http or https address like https://sched.example.org/msched", c.WebURL)
		}
	}
	if c.Host == "" {
		return c, nil
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{
		{"smtp.timeout", &c.Timeout},
		{"smtp.retry", &c.Retry.First},
		{"smtp.retry_max", &c.Retry.MaxDelay},
		{"smtp.max_age", &c.Retry.MaxAge},
	} {
		s := v.GetString(d.key)
		t, err := time.ParseDuration(s)
		if err != nil || t <= 0 {
			return c, fmt.Errorf("config: %s: %q is not a positive duration like 30s or 1h", d.key, s)
		}
		*d.dst = t
	}
	switch c.StartTLS {
	case notify.StartTLSAlways, notify.StartTLSIfOffered, notify.StartTLSNever:
	default:
		return c, fmt.Errorf("config: smtp.starttls: %q: want always, if-offered or never", c.StartTLS)
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("config: smtp.port: %d out of range", c.Port)
	}
	if c.Retry.Attempts < 1 {
		return c, fmt.Errorf("config: smtp.max_attempts: must be ≥ 1, got %d", c.Retry.Attempts)
	}
	if c.Username != "" && c.Password == "" && c.PasswordFile == "" {
		return c, fmt.Errorf("config: smtp.username %q set without smtp.password or smtp.password_file", c.Username)
	}
	return c, nil
}
