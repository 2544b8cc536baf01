package script

// Scripts the queue.Inspector runs for dashboards and tools. Each file's
// header is its contract.
var (
	ListPending = registry["list_pending"]
	ListZset    = registry["list_zset"]
	RunTasks    = registry["run_tasks"]
	DeleteTasks = registry["delete_tasks"]
	CancelTask  = registry["cancel_task"]
)
