// Package upgrade holds the upgrade tests. Programs built from a released
// version's tree, found in git history by the commit CHANGELOG.md names,
// run beside the current code: a producer enqueues tasks, chains and
// batches that the current worker runs all of (TestUpgradeFrom010), and a
// feeder and a worker of that version take part in a rolling upgrade to
// the current one on one Redis (TestRollingUpgradeFrom010).
// The package has no code of its own; its tests live here rather than in
// the repository root so that they build and run beside the other
// packages and follow no package that is being renamed.
package upgrade
