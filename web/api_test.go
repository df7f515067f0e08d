package web

import (
	"encoding/json"
	"regexp"
	"testing"

	"msched/spool"
)

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// Every object of the JSON API names its fields in snake_case, as
// spool.Event, the schedule and the host samples do. Map keys that are
// data (a job's model parameters, states in counts) are not names.
func TestAPI_SnakeCaseEverywhere(t *testing.T) {
	b := fixture{Jobs: 60, Hosts: 6, Now: testNow}.build(t)
	reapedJob(t, b.sp, "J500001", "alice", spool.Job{Name: "r", Command: []string{"/bin/true"}})
	h := handlerFor(b, testNow, "")
	for _, path := range []string{"/api/jobs", "/api/jobs/" + b.byState[spool.Running][0], "/api/jobs/" + b.byState[spool.Finished][0],
		"/api/jobs/J500001", "/api/hosts", "/api/schedule", "/api/models", "/api/daemons", "/api/recent", "/api/usage?span=6h"} {
		w := get(t, h, path)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		var v any
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var walk func(at string, v any)
		walk = func(at string, v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					if !snake.MatchString(k) {
						t.Errorf("%s: %s.%s is not snake_case", path, at, k)
					}
					if k == "params" || k == "counts" {
						continue
					}
					walk(at+"."+k, e)
				}
			case []any:
				for _, e := range x {
					walk(at+"[]", e)
				}
			}
		}
		walk("", v)
	}
}
