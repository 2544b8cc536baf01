// Package upgrade holds the upgrade test: a producer built from a released
// version's tree, found in git history by the commit CHANGELOG.md names,
// enqueues tasks, chains and batches, and the current worker runs them all.
// The package has no code of its own; its test lives here rather than in the
// repository root so that it builds and runs beside the other packages and
// follows no package that is being renamed.
package upgrade
