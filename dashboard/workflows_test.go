package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// evilNode is a node name that is markup, which must come out as text.
const evilNode = "<i>x</i>"

// workflowEnv is a Redis with three workflows, run by a real worker that
// serves queue "wf" (queue "parked" has none), and the dashboard over
// them:
//
//   - diamond: a -> b, c -> d, all succeeded; x after a dies; y skips
//     over x, z runs anyway, w fails after y; slow waits in "parked"
//     and after-slow waits for it and d: the workflow runs.
//   - big: a dying root, 250 children and a join: failed, too big to draw.
//   - wide: 200 nodes in four layers, roots in "parked": drawn.
type workflowEnv struct {
	*env
	diamond, big, wide string
}

// diamondStates is the diamond's nodes once the worker is done with it.
const diamondStates = "a=succeeded b=succeeded c=succeeded d=succeeded " + evilNode + "=dead y=skipped z=succeeded " +
	"w=failed slow=enqueued after-slow=waiting"

func setupWorkflows(t *testing.T) *workflowEnv {
	t.Helper()
	e := &workflowEnv{env: newEnv(t)}
	mux := worker.NewMux()
	mux.HandleFunc("ok", func(context.Context, *worker.Task) error { return nil })
	mux.HandleFunc("die", func(context.Context, *worker.Task) error {
		return worker.SkipRetry(errors.New(`card declined <b>twice</b>`))
	})
	srv, err := worker.NewServer(e.redis.Client(t), worker.Config{Config: e.cfg,
		Queues: map[string]int{"wf": 1}, Concurrency: 8, WorkflowSweep: 100 * time.Millisecond}, mux)
	must(t, err)
	must(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	ok := func() *queue.Task { return queue.NewRawTask("ok", nil, queue.In("wf")) }
	parked := func() *queue.Task { return queue.NewRawTask("ok", nil, queue.In("parked")) }

	wf := queue.NewWorkflow()
	wf.Add("a", ok())
	wf.Add("b", ok(), queue.After("a"))
	wf.Add("c", ok(), queue.After("a"))
	wf.Add("d", ok(), queue.After("b"), queue.After("c"))
	wf.Add(evilNode, queue.NewRawTask("die", nil, queue.In("wf")), queue.After("a"))
	wf.Add("y", ok(), queue.Edge{Parent: evilNode, OnDead: queue.EdgeSkip})
	wf.Add("z", ok(), queue.Edge{Parent: evilNode, OnDead: queue.EdgeRun})
	wf.Add("w", ok(), queue.After("y"))
	wf.Add("slow", parked())
	wf.Add("after-slow", ok(), queue.After("slow"), queue.After("d"))
	e.diamond, err = e.client.EnqueueWorkflow(e.ctx, wf)
	must(t, err)

	big := queue.NewWorkflow()
	big.Add("root", queue.NewRawTask("die", nil, queue.In("wf")))
	var joins []queue.Edge
	for k := range 250 {
		name := fmt.Sprintf("part-%03d", k)
		big.Add(name, ok(), queue.After("root"))
		joins = append(joins, queue.After(name))
	}
	big.Add("join", ok(), joins...)
	e.big, err = e.client.EnqueueWorkflow(e.ctx, big)
	must(t, err)

	e.wide, err = e.client.EnqueueWorkflow(e.ctx, wideWorkflow(parked))
	must(t, err)

	e.waitWorkflow(e.diamond, "the diamond to settle", func(wi *queue.WorkflowInfo) bool { return nodeStates(wi) == diamondStates })
	e.waitWorkflow(e.big, "the big workflow to fail", func(wi *queue.WorkflowInfo) bool { return wi.State == queue.StateFailed })
	e.serve(dashboard.Options{Unauthenticated: true})
	return e
}

// wideWorkflow has 200 nodes: 4 roots, 40 nodes after two roots each,
// 150 after one or two of those, and 6 sinks after 25 each.
func wideWorkflow(task func() *queue.Task) *queue.Workflow {
	w := queue.NewWorkflow()
	for k := range 4 {
		w.Add(fmt.Sprintf("root-%d", k), task())
	}
	for k := range 40 {
		w.Add(fmt.Sprintf("mid-%02d", k), task(), queue.After(fmt.Sprintf("root-%d", k%4)), queue.After(fmt.Sprintf("root-%d", (k+1)%4)))
	}
	for k := range 150 {
		edges := []queue.Edge{queue.After(fmt.Sprintf("mid-%02d", k*7%40))}
		if k%3 == 0 {
			edges = append(edges, queue.Edge{Parent: fmt.Sprintf("mid-%02d", (k*7+1)%40), OnDead: queue.EdgeRun})
		}
		w.Add(fmt.Sprintf("leaf-%03d", k), task(), edges...)
	}
	for k := range 6 {
		var edges []queue.Edge
		for j := k * 25; j < (k+1)*25; j++ {
			edges = append(edges, queue.After(fmt.Sprintf("leaf-%03d", j)))
		}
		w.Add(fmt.Sprintf("sink-%d", k), task(), edges...)
	}
	return w
}

// waitWorkflow polls workflow id until cond holds, and returns it.
func (e *env) waitWorkflow(id, what string, cond func(*queue.WorkflowInfo) bool) *queue.WorkflowInfo {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		wi, err := e.insp.GetWorkflow(e.ctx, id)
		if err == nil && cond(wi) {
			return wi
		}
		if time.Now().After(deadline) {
			if wi != nil {
				e.t.Fatalf("timed out waiting for %s: %s (%s, %v)", what, nodeStates(wi), wi.State, err)
			}
			e.t.Fatalf("timed out waiting for %s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nodeStates lists a workflow's nodes as name=state, in the order they
// were added.
func nodeStates(wi *queue.WorkflowInfo) string {
	var out []string
	for _, n := range wi.Nodes {
		out = append(out, n.Name+"="+string(n.State))
	}
	return strings.Join(out, " ")
}

type apiWorkflow struct {
	ID         string
	State      string
	Why        string
	Total      int
	Edges      int
	Percent    int
	Counts     map[string]int
	CreatedAt  *time.Time `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Nodes      []struct {
		Name    string
		TaskID  string `json:"task_id"`
		Queue   string
		Type    string
		State   string
		Layer   int
		Error   string
		Parents []struct {
			Parent string
			OnDead string `json:"on_dead"`
		}
	}
}

// TestWorkflowPagesAndAPI: the workflow's JSON and page, as the flows
// list links them; a node's task names its workflow; unknown IDs are
// 404s; node names and errors are escaped; a workflow over the drawing
// bound gets a summary per layer; the cancel action cancels a running
// workflow and refuses a finished one.
func TestWorkflowPagesAndAPI(t *testing.T) {
	t.Parallel()
	e := setupWorkflows(t)

	var wf apiWorkflow
	r := e.get("/api/workflows/" + e.diamond)
	r.json(t, &wf)
	if r.code != 200 || wf.ID != e.diamond || wf.State != "active" || wf.Total != 10 || wf.Edges != 10 || len(wf.Nodes) != 10 ||
		wf.CreatedAt == nil || wf.FinishedAt != nil || wf.Percent != 80 {
		t.Fatalf("/api/workflows: %d %s", r.code, r.body)
	}
	want := map[string]int{"waiting": 1, "enqueued": 1, "succeeded": 5, "dead": 1, "failed": 1, "skipped": 1, "cancelled": 0}
	for s, n := range want {
		if wf.Counts[s] != n {
			t.Fatalf("counts %v, want %v", wf.Counts, want)
		}
	}
	layers := map[string]int{"a": 0, "b": 1, "d": 2, evilNode: 1, "y": 2, "w": 3, "slow": 0, "after-slow": 3}
	for _, n := range wf.Nodes {
		if l, ok := layers[n.Name]; ok && n.Layer != l {
			t.Fatalf("node %s in layer %d, want %d", n.Name, n.Layer, l)
		}
		switch n.Name {
		case "d":
			if len(n.Parents) != 2 || n.Parents[0].Parent != "b" || n.Parents[1].Parent != "c" || n.Parents[0].OnDead != "fail" {
				t.Fatalf("node d: %+v", n)
			}
		case "z":
			if len(n.Parents) != 1 || n.Parents[0].Parent != evilNode || n.Parents[0].OnDead != "run" || n.Queue != "wf" || n.Type != "ok" {
				t.Fatalf("node z: %+v", n)
			}
		case evilNode:
			if n.State != "dead" || !strings.Contains(n.Error, "declined <b>twice</b>") || n.TaskID == "" {
				t.Fatalf("node x: %+v", n)
			}
			var task struct {
				Flow struct {
					WorkflowID string `json:"workflow_id"`
					Node       string
				}
			}
			tr := e.get("/api/queues/wf/tasks/" + n.TaskID)
			tr.json(t, &task)
			if tr.code != 200 || task.Flow.WorkflowID != e.diamond || task.Flow.Node != evilNode {
				t.Fatalf("x's task: %d %s", tr.code, tr.body)
			}
		}
	}

	var list struct {
		Workflows []struct {
			Kind     string
			ID       string
			Workflow *apiWorkflow
		}
	}
	r = e.get("/api/workflows")
	r.json(t, &list)
	if r.code != 200 || len(list.Workflows) != 3 {
		t.Fatalf("/api/workflows: %d %s", r.code, r.body)
	}
	for _, f := range list.Workflows {
		if f.Kind != "workflow" || f.Workflow == nil || f.Workflow.ID != f.ID || f.Workflow.Nodes != nil {
			t.Fatalf("flow in the list: %+v", f)
		}
		if f.ID == e.big && (f.Workflow.State != "failed" || f.Workflow.Total != 252 || f.Workflow.Counts["failed"] != 251 ||
			f.Workflow.Counts["dead"] != 1 || f.Workflow.Percent != 100) {
			t.Fatalf("big workflow in the list: %+v", f.Workflow)
		}
	}
	page := e.get("/workflows")
	for _, id := range []string{e.diamond, e.big, e.wide} {
		if page.code != 200 || !strings.Contains(page.body, `href="/dash/workflows/`+id+`"`) {
			t.Fatalf("/workflows does not link workflow %s: %d %s", id, page.code, page.body)
		}
	}

	page = e.get("/workflows/" + e.diamond)
	if page.code != 200 || !strings.Contains(page.body, `id="workflow-graph"`) || strings.Count(page.body, `<g class="node `) != 10+7 ||
		!strings.Contains(page.body, `id="cancel-workflow"`) {
		t.Fatalf("workflow page: %d %s", page.code, page.body)
	}
	if strings.Contains(page.body, evilNode) || !strings.Contains(page.body, "&lt;i&gt;x&lt;/i&gt;") || strings.Contains(page.body, "<b>twice") {
		t.Fatal("a node's name or error is not escaped on the workflow page")
	}
	page = e.get("/workflows/" + e.wide)
	if page.code != 200 || strings.Count(page.body, `<g class="node `) != 200+7 {
		t.Fatalf("a 200-node workflow is not drawn: %d", page.code)
	}
	page = e.get("/workflows/" + e.big)
	if page.code != 200 || strings.Contains(page.body, `id="workflow-graph"`) || !strings.Contains(page.body, `id="workflow-layers"`) ||
		strings.Count(page.body, `<tr data-layer=`) != 3 || !strings.Contains(page.body, "And 52 more.") ||
		strings.Contains(page.body, `id="cancel-workflow"`) {
		t.Fatalf("big workflow page: %d %s", page.code, page.body)
	}

	for _, path := range []string{"/workflows/nope", "/api/workflows/nope"} {
		if r := e.get(path); r.code != 404 {
			t.Fatalf("%s: %d, want 404", path, r.code)
		}
	}
	var notFound struct{ Error string }
	r = e.get("/api/workflows/nope")
	r.json(t, &notFound)
	if !strings.Contains(notFound.Error, "workflow not found") {
		t.Fatalf("404 body %s", r.body)
	}

	token := e.csrf()
	cancel := func(id string) response {
		return e.do(http.MethodPost, "/api/workflows/"+id+"/cancel", nil, "X-CSRF-Token", token)
	}
	if r := cancel("nope"); r.code != 404 {
		t.Fatalf("cancelling an unknown workflow: %d %s", r.code, r.body)
	}
	if r := cancel(e.big); r.code != http.StatusConflict {
		t.Fatalf("cancelling a finished workflow: %d %s", r.code, r.body)
	}
	if r := e.do(http.MethodPost, "/api/workflows/"+e.diamond+"/cancel", nil); r.code != http.StatusForbidden {
		t.Fatalf("cancelling without a CSRF token: %d %s", r.code, r.body)
	}
	r = cancel(e.diamond)
	var done map[string]any
	r.json(t, &done)
	if r.code != 200 || done["ok"] != true || done["action"] != "cancel-workflow" || done["id"] != e.diamond {
		t.Fatalf("cancel: %d %s", r.code, r.body)
	}
	if _, ok := done["queue"]; ok {
		t.Fatalf("cancel answers a queue: %s", r.body)
	}
	wi := e.waitWorkflow(e.diamond, "the cancel to finish", func(wi *queue.WorkflowInfo) bool { return !wi.FinishedAt.IsZero() })
	if wi.State != queue.StateCancelled || wi.Node("after-slow").State != queue.StateCancelled {
		t.Fatalf("after the cancel: %s (%s)", nodeStates(wi), wi.State)
	}
}

// mouseClick clicks the middle of the element a CSS selector finds with
// the mouse, as a user does: SVG elements have no click method.
func mouseClick(b *browser, selector string) {
	b.t.Helper()
	sel, _ := json.Marshal(selector)
	var at struct{ X, Y float64 }
	raw, _ := b.eval(`(function(){ var el = document.querySelector(` + string(sel) + `); if (!el) return "";
		el.scrollIntoView({block: "center", inline: "center"}); var r = el.getBoundingClientRect();
		return JSON.stringify({X: r.x + r.width / 2, Y: r.y + r.height / 2}) })()`).(string)
	if raw == "" {
		b.t.Fatalf("nothing to click at %s", selector)
	}
	must(b.t, json.Unmarshal([]byte(raw), &at))
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		b.call(b.session, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": at.X, "y": at.Y, "button": "left", "clickCount": 1}, nil)
	}
}

// browserNode is a node of the drawn graph as Chromium shows it.
type browserNode struct {
	Name, State, Class, Label string
	Fill, Stroke, Dash        string
	Href                      string
	X, Y, W, H                float64
}

// graphNodes reads the drawn graph's nodes.
func graphNodes(b *browser) []browserNode {
	b.t.Helper()
	raw, _ := b.eval(`JSON.stringify(Array.from(document.querySelectorAll("#workflow-graph g.node")).map(function (g) {
		var r = g.querySelector("rect"), cs = getComputedStyle(r), box = r.getBBox(), a = g.closest("a");
		return {Name: g.dataset.node, State: g.dataset.state, Class: g.getAttribute("class"),
			Label: g.querySelector("text.name").textContent, Fill: cs.fill, Stroke: cs.stroke, Dash: cs.strokeDasharray,
			Href: a ? a.getAttribute("href") : "", X: box.x, Y: box.y, W: box.width, H: box.height};
	}))`).(string)
	var out []browserNode
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		b.t.Fatalf("graph nodes: %v: %s", err, raw)
	}
	return out
}

// edgesThroughNodes lists the drawn edges that pass through a node's box
// on their way, as "parent->child over node".
func edgesThroughNodes(b *browser) []string {
	b.t.Helper()
	raw, _ := b.eval(`JSON.stringify((function () {
		var boxes = Array.from(document.querySelectorAll("#workflow-graph g.node")).map(function (g) {
			var r = g.querySelector("rect").getBBox();
			return {name: g.dataset.node, x: r.x + 1, y: r.y + 1, x2: r.x + r.width - 1, y2: r.y + r.height - 1};
		});
		// points along each edge, from its path's M, C and L commands (all
		// the renderer writes), every 6px or so: getPointAtLength walks the
		// path from its start at each call, which on a busy machine took a
		// 200-node graph past the browser call's deadline
		function points(d) {
			var nums = d.match(/-?\d+(\.\d+)?/g).map(Number), cmds = d.match(/[MCL]/g), out = [], x = 0, y = 0, k = 0;
			cmds.forEach(function (c) {
				if (c === "M") { x = nums[k++]; y = nums[k++]; return }
				var length, f;
				if (c === "L") {
					var x1 = nums[k++], y1 = nums[k++], ax = x, ay = y;
					f = function (t) { return {x: ax + (x1 - ax) * t, y: ay + (y1 - ay) * t} };
					length = Math.hypot(x1 - ax, y1 - ay);
					x = x1; y = y1;
				} else {
					var p = [x, y, nums[k], nums[k + 1], nums[k + 2], nums[k + 3], nums[k + 4], nums[k + 5]];
					k += 6;
					f = function (t) {
						var u = 1 - t, a = u * u * u, b = 3 * u * u * t, c2 = 3 * u * t * t, e = t * t * t;
						return {x: a * p[0] + b * p[2] + c2 * p[4] + e * p[6], y: a * p[1] + b * p[3] + c2 * p[5] + e * p[7]};
					};
					length = Math.hypot(p[2] - p[0], p[3] - p[1]) + Math.hypot(p[4] - p[2], p[5] - p[3]) + Math.hypot(p[6] - p[4], p[7] - p[5]);
					x = p[6]; y = p[7];
				}
				var n = Math.max(2, Math.ceil(length / 6));
				for (var i = 0; i <= n; i++) out.push(f(i / n));
			});
			return out;
		}
		var bad = [];
		document.querySelectorAll("#workflow-graph path.edge").forEach(function (p) {
			var pts = points(p.getAttribute("d"));
			// the ends touch their nodes: 3px of the path at each end are not checked
			for (var i = 0; i < pts.length; i++) {
				var pt = pts[i];
				if (Math.hypot(pt.x - pts[0].x, pt.y - pts[0].y) < 3 || Math.hypot(pt.x - pts[pts.length - 1].x, pt.y - pts[pts.length - 1].y) < 3) continue;
				var hit = boxes.find(function (r) { return pt.x > r.x && pt.x < r.x2 && pt.y > r.y && pt.y < r.y2 });
				if (hit) { bad.push(p.dataset.parent + "->" + p.dataset.child + " over " + hit.name); return }
			}
		});
		return bad;
	})())`).(string)
	var out []string
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		b.t.Fatalf("edges: %v: %s", err, raw)
	}
	return out
}

// TestBrowserWorkflow: in Chromium, the flows page links the workflow;
// its page draws a node per workflow node in its state's colours, with
// the edge policies told apart, and links a node to its task page, which
// links back; a 200-node workflow is drawn without overlaps; a bigger one
// is summarised per layer; the Cancel button cancels the workflow.
func TestBrowserWorkflow(t *testing.T) {
	path := requireChromium(t)
	t.Parallel()
	e := setupWorkflows(t)
	b := startBrowser(t, path).in(t)
	base := e.srv.URL + "/dash"
	wi, err := e.insp.GetWorkflow(e.ctx, e.diamond)
	must(t, err)

	b.navigate(base + "/workflows")
	b.waitFor("the workflows in the flows table", `document.querySelectorAll("table.flows tr.flow.workflow").length === 3`)
	b.screenshot("flows-workflows")
	b.click(`a[href$="/workflows/` + e.diamond + `"]`)
	b.waitFor("the workflow graph", `document.readyState === "complete" && document.getElementById("workflow-graph")`)

	nodes := graphNodes(b)
	if len(nodes) != len(wi.Nodes) {
		t.Fatalf("the graph draws %d nodes, want %d", len(nodes), len(wi.Nodes))
	}
	style := map[string]browserNode{} // the first node seen in each state
	for _, n := range nodes {
		wn := wi.Node(n.Name)
		if wn == nil || n.State != string(wn.State) || n.Class != "node "+string(wn.State) || n.Label != n.Name {
			t.Fatalf("drawn node %+v, want %+v", n, wn)
		}
		if s, ok := style[n.State]; ok && (s.Fill != n.Fill || s.Stroke != n.Stroke || s.Dash != n.Dash) {
			t.Fatalf("two %s nodes drawn differently: %+v, %+v", n.State, s, n)
		}
		style[n.State] = n
		// every node leads to its own page, whether or not its task is kept
		if wantHref := "/dash/workflows/" + e.diamond + "/node?name=" + url.QueryEscape(n.Name); n.Href != wantHref {
			t.Fatalf("node %s (%s) links to %q, want %q", n.Name, n.State, n.Href, wantHref)
		}
	}
	for s1, a := range style {
		for s2, b := range style {
			if s1 < s2 && a.Fill == b.Fill && a.Stroke == b.Stroke && a.Dash == b.Dash {
				t.Fatalf("states %s and %s are drawn alike: %+v", s1, s2, a)
			}
		}
	}
	// the dashboard's colours: --ok, --bad, --accent
	if style["succeeded"].Stroke != "rgb(46, 157, 91)" || style["dead"].Stroke != "rgb(209, 67, 67)" ||
		style["enqueued"].Stroke != "rgb(47, 91, 211)" {
		t.Fatalf("state colours: %+v", style)
	}
	byName := map[string]browserNode{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	if !(byName["a"].X < byName["b"].X && byName["b"].X < byName["d"].X && byName["d"].X < byName["after-slow"].X && byName["b"].X == byName["c"].X) {
		t.Fatalf("layers out of order: %+v", byName)
	}
	if n := b.eval(`document.querySelectorAll("#workflow-graph i, #workflow-graph b").length`); n != float64(0) {
		t.Fatalf("a node's name or error became markup: %v elements", n)
	}
	if bad := edgesThroughNodes(b); len(bad) > 0 {
		t.Fatalf("edges cross nodes: %q", bad)
	}
	if n := b.eval(`document.querySelectorAll("#workflow-graph path.edge").length`); n != float64(wi.Edges) {
		t.Fatalf("%v edges drawn, want %d", n, wi.Edges)
	}
	dash := func(policy string) any {
		return b.eval(`getComputedStyle(document.querySelector("#workflow-graph path.edge.` + policy + `")).strokeDasharray`)
	}
	if fail, run, skip := dash("fail"), dash("run"), dash("skip"); fail != "none" || run == "none" || skip == "none" || run == skip {
		t.Fatalf("edge dashes: fail %v, run %v, skip %v", fail, run, skip)
	}
	if n := b.eval(`document.querySelectorAll("#graph-legend .swatch").length`); n != float64(7+3) {
		t.Fatalf("legend has %v entries", n)
	}
	b.screenshot("workflow")

	// the dead node leads to its page, then to its task (dead: kept),
	// which names the workflow
	x := wi.Node(evilNode)
	mouseClick(b, `#workflow-graph g.node[data-node="`+evilNode+`"] rect`)
	b.waitFor("the dead node's page", `document.readyState === "complete" && document.getElementById("node-error")`)
	if got := b.eval(`document.getElementById("node-error").textContent`); got != x.Error {
		t.Fatalf("the node page shows the error %q, want %q", got, x.Error)
	}
	b.click(`#node-task a`)
	b.waitFor("the dead node's task page", `document.readyState === "complete" && document.getElementById("task-workflow")`)
	if href := b.eval(`document.getElementById("task-workflow").getAttribute("href")`); href != "/dash/workflows/"+e.diamond {
		t.Fatalf("the task links to %v", href)
	}
	if got := b.eval(`location.pathname`); got != "/dash/queues/wf/tasks/"+x.TaskID {
		t.Fatalf("the node led to %v", got)
	}
	b.click("#task-workflow")
	b.waitFor("the workflow page again", `document.readyState === "complete" && document.getElementById("cancel-workflow")`)

	t.Run("Wide", func(t *testing.T) {
		b := b.in(t)
		b.navigate(base + "/workflows/" + e.wide)
		b.waitFor("the wide graph", `document.getElementById("workflow-graph")`)
		nodes := graphNodes(b)
		if len(nodes) != 200 {
			t.Fatalf("%d nodes drawn, want 200", len(nodes))
		}
		for i, a := range nodes {
			for _, c := range nodes[i+1:] {
				if a.X < c.X+c.W && c.X < a.X+a.W && a.Y < c.Y+c.H && c.Y < a.Y+a.H {
					t.Fatalf("nodes %s and %s overlap", a.Name, c.Name)
				}
			}
		}
		if bad := edgesThroughNodes(b); len(bad) > 0 {
			t.Fatalf("%d edges cross nodes, such as %q", len(bad), bad[0])
		}
		b.screenshot("workflow-200")
	})

	t.Run("Big", func(t *testing.T) {
		b := b.in(t)
		big, err := e.insp.GetWorkflow(e.ctx, e.big)
		must(t, err)
		b.navigate(base + "/workflows/" + e.big)
		b.waitFor("the layer summary", `document.getElementById("workflow-layers")`)
		if b.eval(`!!document.getElementById("workflow-graph")`) != false {
			t.Fatal("a 252-node workflow is drawn")
		}
		rows, _ := b.eval(`JSON.stringify(Array.from(document.querySelectorAll("#workflow-layers tbody tr")).map(function (tr) {
			return Array.from(tr.cells).map(function (td) { return td.textContent })
		}))`).(string)
		// layer, nodes, then waiting enqueued succeeded dead failed skipped cancelled
		if rows != `[["0","1","0","0","0","1","0","0","0"],["1","250","0","0","0","0","250","0","0"],["2","1","0","0","0","0","1","0","0"]]` {
			t.Fatalf("layer summary %s", rows)
		}
		first, _ := b.eval(`document.querySelector("#workflow-problems tbody tr").dataset.node`).(string)
		href, _ := b.eval(`document.querySelector("#workflow-problems tbody tr td.id a").getAttribute("href")`).(string)
		if first != "root" || href != "/dash/queues/wf/tasks/"+big.Node("root").TaskID {
			t.Fatalf("first problem %q links to %q", first, href)
		}
		if n := b.eval(`document.querySelectorAll("#workflow-problems tbody tr").length`); n != float64(200) {
			t.Fatalf("%v problems listed, want 200", n)
		}
		b.screenshot("workflow-big")
	})

	t.Run("Cancel", func(t *testing.T) {
		b := b.in(t)
		b.navigate(base + "/workflows/" + e.diamond)
		b.waitFor("the cancel button", `document.getElementById("cancel-workflow")`)
		b.click("#cancel-workflow")
		b.waitFor("the page after the cancel", `location.search.includes("done=cancel-workflow")`)
		b.waitFor("the cancelled workflow", `document.readyState === "complete" && document.getElementById("workflow-state").textContent === "cancelled"`)
		if b.eval(`!!document.getElementById("cancel-workflow")`) != false {
			t.Fatal("a cancelled workflow still offers Cancel")
		}
		if state := b.eval(`document.querySelector('#workflow-graph g.node[data-node="after-slow"]').dataset.state`); state != "cancelled" {
			t.Fatalf("after-slow drawn %v after the cancel", state)
		}
		wi, err := e.insp.GetWorkflow(e.ctx, e.diamond)
		must(t, err)
		if wi.State != queue.StateCancelled {
			t.Fatalf("GetWorkflow reports %s after the cancel", wi.State)
		}
		b.screenshot("workflow-cancelled")
	})
}
