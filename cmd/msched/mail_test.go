package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/viper"
)

// TestReadMail_Keys reads mail.when, mail.domain and web.url as a
// configuration file and the environment give them, with and without
// smtp.host.
func TestReadMail_Keys(t *testing.T) {
	for _, c := range []struct {
		name, file string
		env        map[string]string
		when       []string
		domain     string
		url        string
		err        string
	}{
		{name: "defaults", when: []string{"end"}},
		{name: "the file the first up writes", file: string(defaultConfigFile()), when: []string{"end"}},
		{name: "a list", file: "mail:\n  when: [begin, fail]\n  domain: example.org\n", when: []string{"begin", "fail"}, domain: "example.org"},
		{name: "never", file: "mail:\n  when: []\n", when: []string{}},
		{name: "from the environment", env: map[string]string{"MSCHED_MAIL_WHEN": "begin end", "MSCHED_WEB_URL": "https://sched.example.org/msched/"},
			when: []string{"begin", "end"}, url: "https://sched.example.org/msched"},
		{name: "with smtp", file: "smtp:\n  host: mail.example.org\nweb:\n  url: http://h:8080\n", when: []string{"end"}, url: "http://h:8080"},
		{name: "a typo", file: "mail:\n  when: [ned]\n", err: `mail.when: "ned"`},
		{name: "an address for a domain", file: "mail:\n  domain: alice@example.org\n", err: "mail.domain"},
		{name: "no scheme", file: "web:\n  url: sched.example.org/msched\n", err: "web.url"},
		{name: "a query", file: "web:\n  url: https://h/x?y=1\n", err: "web.url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			v := viper.New()
			setDefaults(v)
			v.SetEnvPrefix("MSCHED")
			v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
			v.AutomaticEnv()
			v.SetConfigType("yaml")
			if err := v.ReadConfig(bytes.NewReader([]byte(c.file))); err != nil {
				t.Fatal(err)
			}
			m, err := readMail(v)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.When, c.when) || (m.When == nil) != (c.when == nil) || m.Domain != c.domain || m.WebURL != c.url {
				t.Errorf("when %q domain %q url %q; want %q %q %q", m.When, m.Domain, m.WebURL, c.when, c.domain, c.url)
			}
		})
	}
}
