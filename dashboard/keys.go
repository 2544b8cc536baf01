package dashboard

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/shardq/shardq/queue"
)

// maxKeyWeight is the largest weight Inspector.SetKeyWeight takes. The
// weight field names it, so a browser refuses more before the server does.
const maxKeyWeight = 1000

// keyList is the Keys tab of a queue page: a page of the keys with the
// most tasks waiting, and the key an operator searched for.
type keyList struct {
	Keys  []queue.GroupInfo
	After string
	Next  string
	// Search is the key asked for, and Found what GetKey read for it: a
	// key with no task has a row too, so a paused one can be resumed.
	Search string
	Found  *queue.GroupInfo
}

// keysPage is a queue page's Keys tab.
func (d *Dashboard) keysPage(w http.ResponseWriter, r *http.Request) {
	kq, err := d.keyQuery(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data, err := d.queueHead(r, kq.Queue, "")
	if err != nil {
		d.fail(w, r, err)
		return
	}
	kp, err := d.insp.Groups(r.Context(), kq)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data.Keys = &keyList{Keys: kp.Groups, After: kq.After, Next: kp.Next,
		Search: strings.TrimSpace(r.URL.Query().Get("key"))}
	if data.Keys.Search != "" {
		if data.Keys.Found, err = d.insp.GetGroup(r.Context(), kq.Queue, data.Keys.Search); err != nil {
			d.fail(w, r, err)
			return
		}
	}
	d.render(w, r, http.StatusOK, "queue", kq.Queue+" keys", data)
}

// keyQuery reads a KeyQuery from the request: after and limit.
func (d *Dashboard) keyQuery(r *http.Request) (queue.GroupQuery, error) {
	v := r.URL.Query()
	limit, err := limitParam(v.Get("limit"), d.opts.PageSize)
	return queue.GroupQuery{Queue: r.PathValue("queue"), After: v.Get("after"), Limit: limit}, err
}

func (d *Dashboard) apiKeys(w http.ResponseWriter, r *http.Request) {
	kq, err := d.keyQuery(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	kp, err := d.insp.Groups(r.Context(), kq)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	out := keyPageView{Keys: make([]keyView, 0, len(kp.Groups)), Next: kp.Next}
	for _, k := range kp.Groups {
		out.Keys = append(out.Keys, newKeyView(k))
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *Dashboard) apiKey(w http.ResponseWriter, r *http.Request) {
	k, err := d.insp.GetGroup(r.Context(), r.PathValue("queue"), r.PathValue("key"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newKeyView(*k))
}

// setKeyWeight sets a key's weight from the weight field. It checks that
// the field is a number; SetKeyWeight checks its bounds.
func setKeyWeight(d *Dashboard, r *http.Request, q, _ string) (int64, error) {
	s := strings.TrimSpace(r.FormValue("weight"))
	w, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%w: weight %q, want a whole number 1..%d", errBadRequest, s, maxKeyWeight)
	}
	return 0, d.insp.SetGroupWeight(r.Context(), q, r.PathValue("key"), w)
}

// keyRowArgs is what the "keyrow" template needs: one key, and the page
// its forms post from.
type keyRowArgs struct {
	Key                             queue.GroupInfo
	Base, Queue, CSRF, Return, Verb string
	ReadOnly                        bool
	// InPath is false for a key named "." or "..": a browser resolves
	// such a path step before it sends the form, so a key ".." would
	// pause the queue itself. Its row offers no action.
	InPath    bool
	MaxWeight int
}

func keyArgs(p page, q string, k queue.GroupInfo) keyRowArgs {
	verb := "pause"
	if k.Paused {
		verb = "resume"
	}
	return keyRowArgs{Key: k, Base: p.Base, Queue: q, CSRF: p.CSRF, Return: p.Return, Verb: verb,
		ReadOnly: p.ReadOnly, InPath: k.Group != "." && k.Group != "..", MaxWeight: maxKeyWeight}
}
