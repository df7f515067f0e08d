package launch

import "testing"

// An array member learns its array and index from its environment, and
// Env cannot forge them; a job that is no member has neither.
func TestLocal_ArrayEnv(t *testing.T) {
	script := `echo "${MSCHED_ARRAY_JOB_ID-unset}|${MSCHED_ARRAY_INDEX-unset}"`
	spec := newSpec(t, "sh", "-c", script)
	spec.ArrayJob, spec.ArrayIndex = "J000012", 7
	spec.Env = []string{"MSCHED_ARRAY_INDEX=99"}
	if res := run(t, spec); !res.OK() {
		t.Fatalf("got %+v", res)
	}
	if got := readFile(t, spec.Stdout); got != "J000012|7\n" {
		t.Errorf("member: got %q", got)
	}
	plain := newSpec(t, "sh", "-c", script)
	if res := run(t, plain); !res.OK() {
		t.Fatalf("got %+v", res)
	}
	if got := readFile(t, plain.Stdout); got != "unset|unset\n" {
		t.Errorf("not a member: got %q", got)
	}
}
