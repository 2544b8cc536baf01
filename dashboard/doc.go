// Package dashboard is shardq's web dashboard: an http.Handler that mounts
// into any Go server and shows every queue through a queue.Inspector.
//
// Pages:
//
//   - the overview: the queues by name, a page at a time (PageSize), with
//     their counts per state, latency and paused state, and a filter by
//     name prefix; a chart of tasks processed and failed over the last
//     hour or day; alarms for queues with no live worker, paused queues
//     that grow, and queues with new dead tasks;
//   - a queue page: a tab per state (pending, active, scheduled, retry,
//     dead, succeeded) and the feed of recent tasks, each paged by marker,
//     the recent feed with a live tail that never misses an entry; the
//     queue's autoscaling figure and its formula; a Groups tab with the
//     groups by backlog and a search by group;
//   - a task page: the payload decoded from msgpack and shown as JSON, the
//     last error, attempts, timestamps, progress and result, and the batch or workflow,
//     batch or workflow it belongs to;
//   - workers: each live worker, its queues and the tasks it holds;
//   - schedules: the cron schedules schedulers registered in Redis;
//   - limits: every queue's limits, their holders and waiters, per group;
//   - flows: recent batches and workflows, each with a page of its
//     own; a workflow's draws its graph, nodes coloured by state;
//   - search: tasks of a queue and state by type, error text or ID prefix;
//   - find: a task by ID.
//
// Actions (POST only): run or delete a task, or every task of a state, or
// a selection; pause and resume a queue or one of its groups; set a
// group's weight; cancel an active task or an active workflow; delete
// a queue. A JSON API
// under /api serves the same data and actions; API.md documents it.
// Options.Metrics serves Prometheus metrics at /metrics.
//
// Every page costs a bounded number of Redis calls, whatever the size of
// the queues: the Inspector reads pages by marker with one script call
// per queue partition. Pages that list queues (the overview, the limits)
// read a page of them, whatever the number of queues. The pages are server-rendered html/template with
// embedded CSS and a little plain JavaScript; nothing is fetched from
// another site.
//
// Safety: Options.BasicAuth or Options.BearerToken require credentials,
// and New refuses Options without either unless Options.Unauthenticated
// says so; an empty secret is an error, never an open dashboard.
// Options.ReadOnly hides and refuses every action; every action needs a
// CSRF token (in the forms, or the X-CSRF-Token header for scripts, from
// GET /api/csrf) and cross-origin requests are refused. Payloads and
// errors are escaped wherever they are shown.
//
// Mount it under a prefix with http.StripPrefix:
//
//	insp, err := queue.NewInspector(rdb, queue.Config{})
//	if err != nil {
//		return err
//	}
//	d, err := dashboard.New(insp, dashboard.Options{
//		BasicAuth: &dashboard.BasicAuth{User: "ops", Password: os.Getenv("DASHBOARD_PASSWORD")},
//	})
//	if err != nil {
//		return err // DASHBOARD_PASSWORD unset: dashboard.ErrInvalid
//	}
//	mux := http.NewServeMux()
//	mux.Handle("/queues/", http.StripPrefix("/queues", d))
//	log.Fatal(http.ListenAndServe(":8080", mux))
package dashboard
