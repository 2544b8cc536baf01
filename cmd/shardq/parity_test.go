package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardParity is the CLI command line that does what each of the
// dashboard's actions does (dashboard/actions.go): the command, then the
// flags that pick the action. Every command line here must exist.
var dashboardParity = map[string][]string{
	"pause":            {"pause", "--queue"},
	"resume":           {"resume", "--queue"},
	"run-all":          {"run", "--queue", "--state", "--yes", "--dry-run"},
	"delete-all":       {"delete", "--queue", "--state", "--yes", "--dry-run"},
	"run":              {"run", "--queue"},
	"delete":           {"delete", "--queue"},
	"cancel":           {"cancel", "--queue"},
	"bulk":             {"run", "--queue"}, // run or delete, a list of task IDs
	"delete-queue":     {"delete-queue", "--queue", "--force", "--yes", "--dry-run"},
	"pause-group":      {"pause", "--queue", "--group"},
	"resume-group":     {"resume", "--queue", "--group"},
	"set-group-weight": {"weight", "--queue", "--group", "--set"},
	"cancel-workflow":  {"cancel", "--workflow"},
}

// TestDashboardActionsHaveCommands: every action the dashboard serves
// has a CLI command with the flags that pick it, so a dashboard action
// added without one fails here. The actions are read from the
// dashboard's source, its table of actions.
func TestDashboardActionsHaveCommands(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "..", "dashboard", "actions.go"))
	if err != nil {
		t.Fatal(err)
	}
	defs := regexp.MustCompile(`\{name: "([a-z-]+)", pattern: "([^"]+)"`).FindAllStringSubmatch(string(src), -1)
	if n := strings.Count(string(src), `pattern: "`); len(defs) < 10 || n != len(defs) {
		t.Fatalf("found %d of %d actions in dashboard/actions.go: has its table of actions changed shape?", len(defs), n)
	}
	var commands []string
	for _, c := range (&Main{}).commands() {
		commands = append(commands, c.name())
	}
	for _, d := range defs {
		name, pattern := d[1], d[2]
		line, ok := dashboardParity[name]
		if !ok {
			t.Errorf("the dashboard's action %q (POST %s) has no CLI command: add one, and a line to dashboardParity", name, pattern)
			continue
		}
		if !slices.Contains(commands, line[0]) {
			t.Errorf("action %q: no command %q", name, line[0])
			continue
		}
		_, help, _ := run(t, nil, line[0], "-h")
		for _, flag := range line[1:] {
			if !strings.Contains(help, "  "+strings.TrimPrefix(flag, "-")) {
				t.Errorf("action %q: shardq %s has no %s flag", name, line[0], flag)
			}
		}
	}
	for name := range dashboardParity {
		if !slices.ContainsFunc(defs, func(d []string) bool { return d[1] == name }) {
			t.Errorf("dashboardParity names %q, which the dashboard no longer has", name)
		}
	}
}

// dashboardReads is the CLI command line that reads what each GET route
// of the dashboard's JSON API serves; "" marks a route the CLI leaves to
// the dashboard, with the reason in the comment.
var dashboardReads = map[string]string{
	"/api/queues":                        "get queues",
	"/api/queues/{queue}":                "describe queue",
	"/api/queues/{queue}/history":        "", // a chart's series: stats, and Prometheus, count
	"/api/history":                       "", // as above
	"/api/queues/{queue}/scaling":        "", // the autoscaling advice, for KEDA and the dashboard
	"/api/queues/{queue}/tasks":          "get tasks",
	"/api/queues/{queue}/tasks/{id}":     "describe task",
	"/api/queues/{queue}/search":         "get tasks",
	"/api/queues/{queue}/groups":         "get groups",
	"/api/queues/{queue}/groups/{group}": "describe group",
	"/api/workers":                       "get workers",
	"/api/schedules":                     "get schedules",
	"/api/limits":                        "describe queue",
	"/api/csrf":                          "", // the token of the dashboard's own forms
	"/api/workflows":                     "get workflows",
	"/api/workflows/{id}":                "describe workflow",
	"/api/workflows/{id}/node":           "describe node",
	"/api/batches/{id}":                  "describe workflow",
}

// TestDashboardReadsHaveCommands: every GET route of the dashboard's API
// is read by a CLI command, or marked as left to the dashboard.
func TestDashboardReadsHaveCommands(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "..", "dashboard", "dashboard.go"))
	if err != nil {
		t.Fatal(err)
	}
	routes := regexp.MustCompile(`"GET (/api/[^"]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 10 {
		t.Fatalf("found %d API routes in dashboard/dashboard.go: have its routes changed shape?", len(routes))
	}
	for _, r := range routes {
		line, ok := dashboardReads[r[1]]
		if !ok {
			t.Errorf("the dashboard's GET %s has no CLI command: add one, and a line to dashboardReads", r[1])
			continue
		}
		if line == "" {
			continue
		}
		args := strings.Fields(line)
		code, out, _ := run(t, nil, args[0], "-h")
		if code != exitOK || !strings.Contains(out, "  "+args[1]+" ") {
			t.Errorf("GET %s: shardq %s lists no kind %q", r[1], args[0], args[1])
		}
	}
}
