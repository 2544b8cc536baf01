package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/shardq/shardq/queue"
)

// actionDef is one action: served as POST <pattern> for forms (which
// redirect back) and POST /api<pattern> for scripts (which answer JSON).
type actionDef struct {
	name    string
	pattern string
	// home sends a form back to the overview: the action's page is gone
	home bool
	// groups sends a form that names no page to return to back to the
	// queue's Groups tab, not to its tasks
	groups bool
	// back, when set, is where a form that names no page to return to
	// goes back to, from the path's ID
	back func(id string) string
	// do runs the action and returns how many tasks it changed.
	do func(d *server, r *http.Request, q, id string) (int64, error)
}

var actions = []*actionDef{
	{name: "pause", pattern: "/queues/{queue}/pause", do: func(d *server, r *http.Request, q, _ string) (int64, error) {
		return 0, d.insp.Pause(r.Context(), q)
	}},
	{name: "resume", pattern: "/queues/{queue}/resume", do: func(d *server, r *http.Request, q, _ string) (int64, error) {
		return 0, d.insp.Resume(r.Context(), q)
	}},
	{name: "run-all", pattern: "/queues/{queue}/run-all", do: func(d *server, r *http.Request, q, _ string) (int64, error) {
		return d.insp.RunAllTasks(r.Context(), q, queue.State(r.FormValue("state")))
	}},
	{name: "delete-all", pattern: "/queues/{queue}/delete-all", do: func(d *server, r *http.Request, q, _ string) (int64, error) {
		return d.insp.DeleteAllTasks(r.Context(), q, queue.State(r.FormValue("state")))
	}},
	{name: "run", pattern: "/queues/{queue}/tasks/{id}/run", do: func(d *server, r *http.Request, q, id string) (int64, error) {
		return 1, d.insp.RunTask(r.Context(), q, id)
	}},
	{name: "delete", pattern: "/queues/{queue}/tasks/{id}/delete", do: func(d *server, r *http.Request, q, id string) (int64, error) {
		return 1, d.insp.DeleteTask(r.Context(), q, id)
	}},
	{name: "cancel", pattern: "/queues/{queue}/tasks/{id}/cancel", do: func(d *server, r *http.Request, q, id string) (int64, error) {
		return 1, d.insp.CancelTask(r.Context(), q, id)
	}},
	{name: "bulk", pattern: "/queues/{queue}/bulk", do: bulkAction},
	{name: "delete-queue", pattern: "/queues/{queue}/delete-queue", home: true,
		do: func(d *server, r *http.Request, q, _ string) (int64, error) {
			return 0, d.insp.DeleteQueue(r.Context(), q, r.FormValue("force") == "1")
		}},
	{name: "pause-group", pattern: "/queues/{queue}/groups/{group}/pause", groups: true,
		do: func(d *server, r *http.Request, q, _ string) (int64, error) {
			return 0, d.insp.Pause(r.Context(), q, r.PathValue("group"))
		}},
	{name: "resume-group", pattern: "/queues/{queue}/groups/{group}/resume", groups: true,
		do: func(d *server, r *http.Request, q, _ string) (int64, error) {
			return 0, d.insp.Resume(r.Context(), q, r.PathValue("group"))
		}},
	{name: "set-group-weight", pattern: "/queues/{queue}/groups/{group}/weight", groups: true, do: setGroupWeight},
	{name: "cancel-workflow", pattern: "/workflows/{id}/cancel",
		back: func(id string) string { return "/workflows/" + url.PathEscape(id) },
		do: func(d *server, r *http.Request, _, id string) (int64, error) {
			return 0, d.insp.CancelWorkflow(r.Context(), id)
		}},
}

// actionHandler serves a; ServeHTTP has checked read-only mode, origin
// and CSRF token already.
func (d *server) actionHandler(a *actionDef, api bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, id, group := r.PathValue("queue"), r.PathValue("id"), r.PathValue("group")
		n, err := a.do(d, r, q, id)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if api {
			out := map[string]any{"ok": true, "action": a.name, "count": n}
			if q != "" {
				out["queue"] = q
			}
			if id != "" {
				out["id"] = id
			}
			if group != "" {
				out["group"] = group
			}
			writeJSON(w, http.StatusOK, out)
			return
		}
		back, ok := safeReturn(r.FormValue("return"))
		switch {
		case !ok && a.back != nil:
			back = a.back(id)
		case !ok && a.groups:
			back = "/queues/" + url.PathEscape(q) + "/groups"
		case !ok:
			back = "/queues/" + url.PathEscape(q)
		}
		if a.home {
			back = "/"
		}
		http.Redirect(w, r, d.base(r)+withFlash(back, a.name, n), http.StatusSeeOther)
	})
}

// safeReturn accepts a path under the dashboard ("/queues/q?state=dead"),
// never another site ("//evil.example", "https://...").
func safeReturn(s string) (string, bool) {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.ContainsAny(s, "\\\r\n\t") {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "", false
	}
	return s, true
}

// withFlash sets the done/n query parameters that make the page show what
// the action did.
func withFlash(path, action string, n int64) string {
	u, _ := url.Parse(path)
	v := u.Query()
	v.Set("done", action)
	v.Set("n", strconv.FormatInt(n, 10))
	u.RawQuery = v.Encode()
	return u.String()
}

// maxBulk bounds how many tasks one bulk action names.
const maxBulk = 500

// bulkAction runs or deletes the tasks a form or API call names (id, any
// number of times; action run or delete) and returns how many it changed.
// A task that left its state meanwhile is skipped; the first other error
// stops it.
func bulkAction(d *server, r *http.Request, q, _ string) (int64, error) {
	if err := r.ParseForm(); err != nil {
		return 0, fmt.Errorf("%w: %v", errBadRequest, err)
	}
	ids := r.Form["id"]
	if len(ids) == 0 || len(ids) > maxBulk {
		return 0, fmt.Errorf("%w: %d task IDs, want 1..%d", errBadRequest, len(ids), maxBulk)
	}
	var act func(ctx context.Context, queue, id string) error
	switch r.FormValue("action") {
	case "run":
		act = d.insp.RunTask
	case "delete":
		act = d.insp.DeleteTask
	default:
		return 0, fmt.Errorf("%w: action %q, want run or delete", errBadRequest, r.FormValue("action"))
	}
	var n int64
	for _, id := range ids {
		err := act(r.Context(), q, id)
		switch {
		case err == nil:
			n++
		case errors.Is(err, queue.ErrTaskState), errors.Is(err, queue.ErrNotFound):
		default:
			return n, err
		}
	}
	return n, nil
}
