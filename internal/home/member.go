package home

import "context"

// MemberKey is the context key under which a worker's handler context
// answers the ID of the workflow (a batch among them) its task is a node
// of.
type MemberKey struct{}

// MemberOf returns the workflow whose node's task ctx runs, or "". A
// batch takes additions from its own members after it was closed: it
// cannot finish while they run.
func MemberOf(ctx context.Context) string {
	id, _ := ctx.Value(MemberKey{}).(string)
	return id
}
