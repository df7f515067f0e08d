package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

// loadWith runs loadConfig on a configuration file holding body (mode
// perm), with env set; it returns loadConfig's error.
func loadWith(t *testing.T, body string, perm os.FileMode, env map[string]string) error {
	t.Helper()
	for k, val := range env {
		t.Setenv(k, val)
	}
	f := filepath.Join(t.TempDir(), "msched.yaml")
	if err := os.WriteFile(f, []byte(body), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f, perm); err != nil {
		t.Fatal(err)
	}
	v := viper.New()
	setDefaults(v)
	cmd := &cobra.Command{}
	cmd.Flags().String("config", f, "")
	return loadConfig(v, cmd)
}

func TestConfig_Strict(t *testing.T) {
	for _, c := range []struct {
		name, body string
		env        map[string]string
		want       string // "" : accepted
	}{
		{"the file the first up writes", string(defaultConfigFile()), nil, ""},
		{"a typo", "polcy: easy\n", nil, `unknown key "polcy"`},
		{"a typo in a section", "ga:\n  populaton: 10\n", nil, `unknown key "ga.populaton"`},
		{"a section as a value", "ga: 5\n", nil, `unknown key "ga"`},
		{"a word for a count", "ga:\n  population: ten\n", nil, "ga.population: ten is not a whole number"},
		{"a fraction for a count", "run:\n  max_attempts: 2.5\n", nil, "run.max_attempts: 2.5 is not a whole number"},
		{"a word for a number", "profiler:\n  confidence: high\n", nil, "profiler.confidence: high is not a number"},
		{"a word for a switch", "learning:\n  correct: maybe\n", nil, "learning.correct: maybe is not true or false"},
		{"a list for a string", "policy: [easy, lwf]\n", nil, "policy: want a single value"},
		{"a word in the environment", "", map[string]string{"MSCHED_GA_WINDOW": "wide"}, "ga.window: wide is not a whole number"},
		{"numbers as they should be", "ga:\n  population: 30\n  window: 40\nprofiler:\n  confidence: 0.9\nlearning:\n  correct: true\nssh:\n  options: [\"-o\", \"ConnectTimeout=5\"]\n", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := loadWith(t, c.body, 0o644, c.env)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted, want an error saying %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// A configuration file that holds a secret must not be readable by others.
func TestConfig_SecretsNeedMode0600(t *testing.T) {
	body := "web:\n  token: s3cret\n"
	if err := loadWith(t, body, 0o644, nil); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a 0644 file with web.token: %v, want a refusal saying chmod 600", err)
	}
	if err := loadWith(t, body, 0o600, nil); err != nil {
		t.Fatalf("a 0600 file with web.token: %v", err)
	}
	if err := loadWith(t, "web:\n  token: \"\"\n", 0o644, nil); err != nil {
		t.Fatalf("a 0644 file without a secret: %v", err)
	}
	// A secret from the environment is no file's business.
	if err := loadWith(t, "policy: easy\n", 0o644, map[string]string{"MSCHED_SMTP_PASSWORD": "x"}); err != nil {
		t.Fatalf("a 0644 file, the password in the environment: %v", err)
	}
}
