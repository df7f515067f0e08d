package profiler

import (
	"strings"
	"testing"

	"msched/acct"
)

func TestCategory(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		argv []string
		want string
	}{
		{nil, ""},
		{[]string{"sleep", "40"}, "sleep"},
		{[]string{"./AppParticles", "-n", "20000"}, "./AppParticles"},
		{[]string{"sh", "-c", "sleep 40"}, "sh -c sleep 40"},
		{[]string{"/bin/bash", "-e", "-o", "pipefail", "-c", "make all"}, "/bin/bash -c make all"},
		{[]string{"bash", "-ec", "make all"}, "bash -c make all"},
		{[]string{"bash", "run.sh", "--fast"}, "bash run.sh"},
		{[]string{"sh"}, "sh"},
		{[]string{"python3", "train.py", "--epochs", "3"}, "python3 train.py"},
		{[]string{"/usr/bin/python3.12", "-u", "-W", "ignore", "train.py"}, "/usr/bin/python3.12 train.py"},
		{[]string{"python3", "-m", "http.server"}, "python3 -m http.server"},
		{[]string{"perl", "-e", "print 1"}, "perl -e print 1"},
		{[]string{"java", "-cp", "lib", "-jar", "app.jar", "x"}, "java -jar app.jar"},
		{[]string{"java", "-cp", "lib", "Main"}, "java Main"},
		{[]string{"awk", "-F", ":", "{print $1}", "/etc/passwd"}, "awk {print $1}"},
		{[]string{"env", "OMP_NUM_THREADS=4", "-u", "X", "python3", "a.py"}, "python3 a.py"},
		{[]string{"env"}, "env"},
		{[]string{"sh", "-c", long}, "sh -c " + long[:MaxCategory-len("sh -c ")]},
		{[]string{"sh", "--", "x.sh"}, "sh x.sh"},
	} {
		if got := Category(c.argv); got != c.want {
			t.Errorf("Category(%q) = %q, want %q", c.argv, got, c.want)
		}
	}
	if got := Category([]string{"sh", "-c", strings.Repeat("é", 200)}); len(got) > MaxCategory || !strings.HasPrefix(got, "sh -c é") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("clipped to %d bytes: %q", len(got), got)
	}
}

// The feed counts a run in its record's category; a record of an older
// reaper, which has none, in its executable.
func TestRecordCategory(t *testing.T) {
	if got := RecordCategory(acct.Record{Executable: "sh", Category: "sh -c make"}); got != "sh -c make" {
		t.Errorf("with a category: %q", got)
	}
	if got := RecordCategory(acct.Record{Executable: "./sim"}); got != "./sim" {
		t.Errorf("without: %q", got)
	}
}
