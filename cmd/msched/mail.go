package main

import (
	"fmt"
	"time"

	"github.com/spf13/viper"

	"msched/notify"
)

// readMail reads the smtp.* keys. Without smtp.host mail is off and the
// rest is not checked.
func readMail(v *viper.Viper) (notify.MailConfig, error) {
	c := notify.MailConfig{
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
