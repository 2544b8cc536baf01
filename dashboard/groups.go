package dashboard

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/queue"
)

// maxGroupWeight is the largest weight Inspector.SetGroupWeight takes. The
// weight field names it, so a browser refuses more before the server does.
const maxGroupWeight = 1000

// groupList is the Groups tab of a queue page: a page of the groups with
// the most tasks waiting, and the group an operator searched for.
type groupList struct {
	Groups []queue.GroupInfo
	After  string
	Next   string
	// Search is the group asked for, and Found what GetGroup read for it:
	// a group with no task has a row too, so a paused one can be resumed.
	Search string
	Found  *queue.GroupInfo
}

// groupsPage is a queue page's Groups tab.
func (d *server) groupsPage(w http.ResponseWriter, r *http.Request) {
	gq, err := d.groupQuery(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data, err := d.queueHead(r, gq.Queue, "")
	if err != nil {
		d.fail(w, r, err)
		return
	}
	gp, err := d.insp.Groups(r.Context(), gq)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data.Groups = &groupList{Groups: gp.Groups, After: gq.After, Next: gp.Next,
		Search: strings.TrimSpace(r.URL.Query().Get("group"))}
	if data.Groups.Search != "" {
		if data.Groups.Found, err = d.insp.GetGroup(r.Context(), gq.Queue, data.Groups.Search); err != nil {
			d.fail(w, r, err)
			return
		}
	}
	d.render(w, r, http.StatusOK, "queue", gq.Queue+" groups", data)
}

// groupQuery reads a GroupQuery from the request: after and limit.
func (d *server) groupQuery(r *http.Request) (queue.GroupQuery, error) {
	v := r.URL.Query()
	limit, err := limitParam(v.Get("limit"), d.opts.PageSize)
	return queue.GroupQuery{Queue: r.PathValue("queue"), After: v.Get("after"), Limit: limit}, err
}

func (d *server) apiGroups(w http.ResponseWriter, r *http.Request) {
	gq, err := d.groupQuery(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	gp, err := d.insp.Groups(r.Context(), gq)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	live, err := inspect.LiveWork(r.Context(), d.insp)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	out := groupPageView{Groups: make([]groupView, 0, len(gp.Groups)), Next: gp.Next}
	for _, g := range gp.Groups {
		out.Groups = append(out.Groups, newGroupView(g, live[gq.Queue]))
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *server) apiGroup(w http.ResponseWriter, r *http.Request) {
	g, err := d.insp.GetGroup(r.Context(), r.PathValue("queue"), r.PathValue("group"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	live, err := inspect.LiveWork(r.Context(), d.insp)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newGroupView(*g, live[r.PathValue("queue")]))
}

// setGroupWeight sets a group's weight from the weight field. It checks
// that the field is a number; SetGroupWeight checks its bounds.
func setGroupWeight(d *server, r *http.Request, q, _ string) (int64, error) {
	s := strings.TrimSpace(r.FormValue("weight"))
	w, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%w: weight %q, want a whole number 1..%d", errBadRequest, s, maxGroupWeight)
	}
	return 0, d.insp.SetGroupWeight(r.Context(), q, r.PathValue("group"), w)
}

// groupRowArgs is what the "grouprow" template needs: one group, and the
// page its forms post from.
type groupRowArgs struct {
	Group queue.GroupInfo
	// Running and Ahead split Group.Running, the leased tasks: handlers
	// running, and tasks a worker leased ahead and holds.
	Running, Ahead                  int64
	Base, Queue, CSRF, Return, Verb string
	ReadOnly                        bool
	// InPath is false for a group named "." or "..": a browser resolves
	// such a path step before it sends the form, so a group ".." would
	// pause the queue itself. Its row offers no action.
	InPath    bool
	MaxWeight int
}

func groupArgs(p page, q string, g queue.GroupInfo) groupRowArgs {
	verb := "pause"
	if g.Paused {
		verb = "resume"
	}
	var work inspect.QueueWork
	if d, ok := p.Data.(*queueData); ok {
		work = d.Work
	}
	running, ahead := work.SplitGroup(g.Group, g.Running)
	return groupRowArgs{Group: g, Running: running, Ahead: ahead, Base: p.Base, Queue: q, CSRF: p.CSRF, Return: p.Return, Verb: verb,
		ReadOnly: p.ReadOnly, InPath: g.Group != "." && g.Group != "..", MaxWeight: maxGroupWeight}
}
